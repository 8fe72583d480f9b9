"""The use cases of rankgate, one module each: a frozen request in, a frozen result out.

A flow validates its request once, loads the inputs, runs the capabilities and decisions below it and
returns data; it prints nothing and writes only where its request names a path. ``rankgate.cli``
turns command-line options into a request and renders the result; Python code builds the request
directly (see docs/architecture.md).
"""
