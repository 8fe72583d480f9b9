"""The use cases, one module each: a frozen request in, a frozen result out.

A flow loads its inputs, scores them and runs the statistics and decisions its request asks for, once;
it prints nothing and writes nothing but what its request names. The command line (``commands/``)
builds a request from its options, runs the flow and renders the result; Python callers build the
request themselves::

    from rankgate.flows.evaluate import EvaluateRequest, run_evaluation

    evaluation = run_evaluation(EvaluateRequest("gold.jsonl", "run.jsonl", by=("intent",)))

Flows sit above the decision modules (gates, compare, stats…) and below ``report/``, which renders
what a flow returns. Nothing is imported here: each flow imports what it needs when it runs.
"""
