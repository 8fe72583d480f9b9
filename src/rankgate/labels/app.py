"""The labelling app: an ASGI app on Starlette (the ``label`` extra), pages rendered on the server by
:mod:`rankgate.labels.pages`, a small script of our own (``static/app.js``) for the keys and the writes.

Safe by default:

* **a session token**: the address ``rankgate label serve`` prints carries it once (``/?token=…``); the app answers
  with a cookie (HttpOnly, SameSite=Strict) and sends the browser to the same address without it. A page asked for
  without the cookie is refused (403), and so is every write (``POST /api/…``) that does not carry the token in its
  ``X-Rankgate-Token`` header: a page of another site can make the browser send the cookie, never the header;
* **every text escaped** (chunk, answer and trace texts come from production; :mod:`rankgate.labels.pages`);
* **a Content-Security-Policy** that allows the app's own script, stylesheet and requests, and nothing else: no
  inline script or style, no outside request, no frame; ``Host`` must be the address served (no DNS rebinding);
* the server binds 127.0.0.1 unless told otherwise (:func:`check_host`).
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlencode

from rankgate.errors import InputError, RankgateError
from rankgate.labels.pages import BrowseView, browse_list, browse_query, card_fragment, page
from rankgate.labels.scales import Scale
from rankgate.labels.store import LabelStore

if TYPE_CHECKING:  # pragma: no cover
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["CSP", "AppConfig", "build_app"]

COOKIE = "rankgate_label"
WHO = "rankgate_annotator"
HEADER = "x-rankgate-token"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"), (b"cross-origin-opener-policy", b"same-origin"),
                    (b"cross-origin-resource-policy", b"same-origin")]
MAX_BODY = 64 * 1024  # the largest write accepted (a grade and a note)


@dataclass
class AppConfig:
    store: LabelStore
    scale: Scale
    token: str
    annotator: str | None = None          # the name of every session that gives none
    guide: str = ""                       # the guidelines as HTML (pages.render_guide)
    browse: BrowseView | None = None
    queue: bool = True                    # cards to label (else the browse view only)
    hosts: tuple[str, ...] | None = ("127.0.0.1", "localhost")  # Host headers accepted; None: any
    title: str = "rankgate label"


class _Headers:
    """Pure ASGI middleware: the security headers on every response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [h for h in SECURITY_HEADERS if h[0] not in names]
            await send(message)

        await self.app(scope, receive, sending)


def build_app(cfg: AppConfig) -> Starlette:
    """The app (module docs)."""
    from importlib.resources import files

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    static = {name: (files("rankgate.labels") / "static" / name).read_bytes() for name in ("app.js", "app.css")}
    types = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}

    def annotator_of(request: Request) -> str | None:
        name = request.cookies.get(WHO)
        return unquote(name) if name else cfg.annotator

    def authed(request: Request) -> bool:
        return hmac.compare_digest(request.cookies.get(COOKIE, "").encode(), cfg.token.encode())

    def refused(why: str) -> Response:
        return HTMLResponse("<!doctype html><title>rankgate label</title><h1>Not allowed</h1><p>"
                            f"{why}</p>", status_code=403)

    def entered(request: Request) -> Response | None:
        """The token in the address once: the cookie set, the same address without it."""
        given = request.query_params.get("token")
        if given is None:
            return None
        if not hmac.compare_digest(given.encode(), cfg.token.encode()):
            return refused("This address's token is not this server's: open the address rankgate label serve printed.")
        rest = [(k, v) for k, v in request.query_params.multi_items() if k not in ("token", "annotator")]
        target = request.url.path + (("?" + urlencode(rest)) if rest else "")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, cfg.token, httponly=True, samesite="strict", path="/")
        name = request.query_params.get("annotator")
        if name:
            response.set_cookie(WHO, quote(name.strip()[:64], safe=""), httponly=True, samesite="strict", path="/")
        return response

    def whole(body: str, request: Request, mode: str, title: str) -> Response:
        nav = ""
        if cfg.browse is not None and cfg.queue:
            nav = '<nav><a href="/">cards</a> <a href="/browse">browse</a></nav>'
        annotator = annotator_of(request)
        return HTMLResponse(page(title, body, token=cfg.token, annotator=annotator,
                                 mode=mode if annotator else "name", guide=cfg.guide, nav=nav))

    def fragment(annotator: str | None) -> str:
        card = cfg.store.next_card(annotator) if annotator else None
        return card_fragment(card, cfg.scale, cfg.store.progress(annotator), annotator)

    def names_form() -> str:
        return card_fragment(None, cfg.scale, cfg.store.progress(None), None)

    async def home(request: Request) -> Response:
        first = entered(request)
        if first is not None:
            return first
        if not authed(request):
            return refused("Open the address rankgate label serve printed (it carries this session's token).")
        if not cfg.queue:
            return RedirectResponse("/browse", status_code=303)
        try:
            body = fragment(annotator_of(request))
        except RankgateError as exc:
            return HTMLResponse(f"<!doctype html><title>rankgate label</title><p>{_esc(str(exc))}</p>", status_code=503)
        return whole(body, request, "card", cfg.title)

    async def browse(request: Request) -> Response:
        first = entered(request)
        if first is not None:
            return first
        if not authed(request):
            return refused("Open the address rankgate label serve printed (it carries this session's token).")
        if cfg.browse is None:
            return HTMLResponse("<!doctype html><title>rankgate label</title><p>No runs to browse: serve with --gold "
                                "and --runs.</p>", status_code=404)
        if not annotator_of(request):
            return whole(names_form(), request, "name", cfg.title)
        p = request.query_params
        body = browse_list(cfg.browse, failing=p.get("failing") == "1", moved=p.get("moved") == "1",
                           segment=p.get("segment", ""), search=p.get("q", "")[:200])
        return whole(body, request, "browse", "Queries · rankgate label")

    async def browse_one(request: Request) -> Response:
        first = entered(request)
        if first is not None:
            return first
        if not authed(request):
            return refused("Open the address rankgate label serve printed (it carries this session's token).")
        annotator = annotator_of(request)
        if cfg.browse is None:
            return HTMLResponse("<!doctype html><p>No runs to browse.</p>", status_code=404)
        if not annotator:
            return whole(names_form(), request, "name", cfg.title)
        q = cfg.browse.find(request.query_params.get("id", ""))
        if q is None:
            return HTMLResponse("<!doctype html><title>rankgate label</title><p>No such query.</p>", status_code=404)
        keys = [(q.query_id, it.id) for top in q.tops for it in top]
        body = browse_query(cfg.browse, q, cfg.scale, cfg.store.mine(annotator, keys))
        return whole(body, request, "browse", f"{q.query_id} · rankgate label")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in static:
            return Response(status_code=404)
        return Response(static[name], media_type=types[name])

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)  # (browsers ask; there is none, and a 404 would read as an error)

    async def write(request: Request) -> Response:
        if not (authed(request) and hmac.compare_digest(request.headers.get(HEADER, "").encode(), cfg.token.encode())):
            return JSONResponse({"error": "refused: this write carries no session token"}, status_code=403)
        body = await _capped_body(request)
        if body is None:
            return JSONResponse({"error": "too large"}, status_code=413)
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return JSONResponse({"error": "the body is not JSON"}, status_code=400)
        if not isinstance(data, dict):
            return JSONResponse({"error": "the body is not a JSON object"}, status_code=400)
        action = request.path_params["action"]
        if action == "annotator":
            name = str(data.get("name") or "").strip()
            if not name or len(name) > 64:
                return JSONResponse({"error": "give a name of 1 to 64 characters"}, status_code=400)
            response = JSONResponse({"ok": True})
            response.set_cookie(WHO, quote(name, safe=""), httponly=True, samesite="strict", path="/")
            return response
        annotator = annotator_of(request)
        if not annotator:
            return JSONResponse({"error": "say who is labelling first"}, status_code=400)
        try:
            return JSONResponse(_act(cfg, action, annotator, data, fragment))
        except InputError as exc:  # (a locked database: the label was not written; the page keeps it)
            return JSONResponse({"error": str(exc)}, status_code=503)
        except RankgateError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except (TypeError, ValueError, KeyError) as exc:
            return JSONResponse({"error": f"bad request: {exc}"}, status_code=400)

    routes = [Route("/", home), Route("/browse", browse), Route("/browse/query", browse_one),
              Route("/static/{name}", asset), Route("/favicon.ico", no_icon),
              Route("/api/{action}", write, methods=["POST"])]
    middleware = [Middleware(_Headers)]
    if cfg.hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(cfg.hosts)))
    return Starlette(routes=routes, middleware=middleware)


def _esc(text: str) -> str:
    from html import escape

    return escape(text)


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer")
    return value


def _verdict(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValueError("a verdict is true, false or null")


def _act(cfg: AppConfig, action: str, annotator: str, data: dict[str, Any], fragment: Any) -> dict[str, Any]:
    store = cfg.store
    note = data.get("note") if isinstance(data.get("note"), str) else None
    if action == "grade":
        pos = _int(data.get("pos"), "pos")
        if cfg.scale.kind == "grade":
            store.give(annotator, pos, grade=_int(data.get("grade"), "grade"), note=note)
        else:
            store.give(annotator, pos, faithful=_verdict(data.get("faithful")), correct=_verdict(data.get("correct")),
                       note=note)
        return {"html": fragment(annotator), "said": "saved"}
    if action == "skip":
        store.skip(annotator, _int(data.get("pos"), "pos"))
        return {"html": fragment(annotator), "said": "skipped"}
    if action == "undo":
        back = store.undo(annotator)
        return {"html": fragment(annotator), "said": "nothing to undo" if back is None else "undone"}
    if action == "browse-grade":
        view = cfg.browse
        if view is None:
            raise ValueError("no runs to browse")
        q = view.find(str(data.get("query_id", "")))
        d = str(data.get("id", ""))
        found = None if q is None else next((it for top in q.tops for it in top if it.id == d), None)
        if q is None or found is None:
            raise ValueError("no such item in the runs' top k")
        where = ", ".join(f"{r} {rank}" for r, rank in zip(view.runs, found.ranks) if rank is not None)
        pos = store.item_at(q.query_id, d, {"query": q.query, "text": found.text, "segment": q.segment,
                                            "why": f"browse view: rank {where}", "gold": found.gold})
        grade = _int(data.get("grade"), "grade")
        store.give(annotator, pos, grade=grade, note=note, via="browse")
        return {"mine": grade, "said": f"saved: {q.query_id} / {d} = {grade}"}
    raise ValueError(f"no action {action!r}")


async def _capped_body(request: Request) -> bytes | None:
    """The request's body, or None once it passes MAX_BODY: read as it streams in, so a huge body is refused
    without being held (a Content-Length over the cap is refused before anything is read)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        return None
    got = bytearray()
    async for chunk in request.stream():
        got += chunk
        if len(got) > MAX_BODY:
            return None
    return bytes(got)
