"""Layer 0: helpers that know nothing of gold sets or runs, and import nothing of rankgate but ``errors``.

Atomic writes, config files, declared parameter bounds, the ``module:Class`` plug-in loader, redaction of
secrets, JSON-able values, memory estimates and the pandas guard.
"""
