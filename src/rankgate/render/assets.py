"""The style sheet and the few lines of script inlined into every HTML report."""

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

CSS = """
:root { --ink:#1f2937; --muted:#6b7280; --line:#e5e7eb; --soft:#f8fafc; --blue:#2563eb; --red:#dc2626;
  --red-bg:#fef2f2; --amber:#b45309; --amber-bg:#fffbeb; --green:#15803d; --green-bg:#f0fdf4; --info-bg:#eff6ff; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--ink); background: #fff; font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto,
  Helvetica, Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 0 24px 64px; }
header.top { border-bottom: 1px solid var(--line); background: var(--soft); }
header.top .inner { max-width: 1180px; margin: 0 auto; padding: 20px 24px 14px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 36px 0 6px; padding-top: 8px; border-top: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 6px; }
p.lead, .muted { color: var(--muted); }
p.lead { margin: 0 0 12px; }
code, .id { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
nav.toc { position: sticky; top: 0; z-index: 2; background: #fff; border-bottom: 1px solid var(--line); }
nav.toc .inner { max-width: 1180px; margin: 0 auto; padding: 8px 24px; display: flex; flex-wrap: wrap; gap: 4px 18px; }
nav.toc a { color: var(--muted); text-decoration: none; font-size: 13px; }
nav.toc a:hover { color: var(--blue); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 0; font-size: 13px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.verdict { display: inline-block; font-weight: 600; padding: 3px 10px; border-radius: 999px; font-size: 13px; }
.verdict.pass { background: var(--green-bg); color: var(--green); border: 1px solid #bbf7d0; }
.verdict.fail { background: var(--red-bg); color: var(--red); border: 1px solid #fecaca; }
.cards { display: grid; gap: 10px; }
.finding { border: 1px solid var(--line); border-left: 4px solid var(--muted); border-radius: 6px; padding: 10px 14px; }
.finding.problem { border-left-color: var(--red); background: var(--red-bg); }
.finding.warning { border-left-color: #f59e0b; background: var(--amber-bg); }
.finding.info { border-left-color: var(--blue); background: var(--info-bg); }
.finding .t { font-weight: 600; }
.finding .sev { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin-left: 6px; }
.finding p { margin: 4px 0 0; }
.finding .try::before { content: "Try: "; font-weight: 600; }
.ok { color: var(--green); }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12px; white-space: nowrap; background: #fff; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.total td { font-weight: 600; }
td .ci { display: block; color: var(--muted); font-size: 11.5px; }
table.panel td.metric { font-weight: 600; }
table.panel td.big { font-size: 16px; font-weight: 600; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th::after { content: " ↕"; color: #cbd5e1; }
table.sortable th[aria-sort=ascending]::after { content: " ↑"; color: var(--blue); }
table.sortable th[aria-sort=descending]::after { content: " ↓"; color: var(--blue); }
tr.fail td { background: var(--red-bg); }
tr.warn td { background: var(--amber-bg); }
tr.fail td.fail { background: #fee2e2; color: var(--red); font-weight: 600; }
tr.warn td.warn, tr.fail td.warn { background: #fef3c7; color: var(--amber); font-weight: 600; }
td.fail .ci, td.warn .ci { font-weight: 400; }
td.flags { min-width: 12em; }
td.flags .tag { display: block; width: max-content; max-width: 100%; white-space: normal; margin: 0 0 2px; }
.scroll { overflow-x: auto; max-width: 100%; }
.scroll > table { min-width: 0; }
table.segments th, table.segments td { padding: 5px 6px; }
table.segments tr > :first-child { position: sticky; left: 0; z-index: 1; background: #fff; }
table.segments tr.fail > td:first-child { background: var(--red-bg); }
table.segments tr.warn > td:first-child { background: var(--amber-bg); }
.warnword { color: var(--amber); font-weight: 600; }
.tag { display: inline-block; font-size: 11.5px; padding: 0 7px; border-radius: 999px; background: #f1f5f9; color: #475569;
  margin-right: 4px; }
.tag.bad { background: #fee2e2; color: var(--red); }
.tag.good { background: #dcfce7; color: var(--green); }
.tag.warn { background: #fef3c7; color: var(--amber); }
ul.sentences { padding-left: 18px; }
.better { color: var(--green); font-weight: 600; }
.worse { color: var(--red); font-weight: 600; }
svg.chart { width: 100%; height: auto; display: block; margin: 6px 0 4px; }
details.miss { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; }
details.miss > summary { cursor: pointer; padding: 8px 12px; list-style-position: inside; }
details.miss[open] > summary { border-bottom: 1px solid var(--line); background: var(--soft); }
details.miss .q { font-weight: 600; }
details.miss .body { padding: 8px 12px 12px; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
@media (max-width: 900px) { .cols { grid-template-columns: 1fr; } }
td.snip { color: #374151; font-size: 12.5px; }
td.ver { white-space: nowrap; }
table.items td.id { white-space: nowrap; }
table.offences td[rowspan] { max-width: 260px; background: #fff; }
table.panel { width: auto; min-width: 640px; }
table.compact { width: auto; min-width: 480px; }
table.compact th, table.compact td { padding: 5px 14px 5px 8px; }
td.differs { background: var(--amber-bg); color: var(--amber); font-weight: 600; }
h4 { font-size: 13px; margin: 12px 0 4px; }
table.panel th, table.panel td { padding: 6px 14px; }
tr.rel td { background: var(--green-bg); }
tr.bad td { background: var(--red-bg); }
.grade { font-weight: 600; }
@media (max-width: 900px) {
  main, header.top .inner, nav.toc .inner { padding-left: 14px; padding-right: 14px; }
  table.panel, table.compact { min-width: 0; }
  table.panel th, table.panel td, table.compact th, table.compact td { padding: 5px 7px; }
  table.panel td.big { font-size: 14px; }
}
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
"""

# Sort a table by the clicked column: numbers by data-v, text otherwise; empty cells always last.
JS = """
document.querySelectorAll('table.sortable thead th').forEach(function (th) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('thead th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
    var key = function (row) { var c = row.cells[col]; return c.hasAttribute('data-v') ? c.getAttribute('data-v') : c.textContent; };
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === '' || y === '') { return (x === '') - (y === ''); }
      var nx = Number(x), ny = Number(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""
