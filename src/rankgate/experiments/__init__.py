"""Component experiments: what-ifs and stress tests over a retrieval stack.

Each module computes one experiment from loaded data and evaluation results and returns frozen
values with ``to_dict()``; nothing here renders (see :mod:`rankgate.render.experiments`).

============================  ===================================================================
module                        question it answers
============================  ===================================================================
:mod:`.paired`                the paired table (before / after, per metric and segment, with CIs)
                              every experiment below reports
:mod:`.freshness`             how much did the run rely on documents newer than the label's as_of?
:mod:`.latency`               is the latency budget kept, with intervals, per stage and segment?
:mod:`.stress`                does the reranker hold up when hard negatives are put on top?
:mod:`.rewrite`               does the query rewrite help or hurt, and for which queries?
:mod:`.routing`               does the router send queries to the index they belong to?
:mod:`.linking`               are the right entities linked?
============================  ===================================================================
"""
