"""The nouns, with no I/O: gold sets and runs (:mod:`.gold_run`), the ranking rule (:mod:`.ranking`), item ids as
integers (:mod:`.ids`) and evaluation results (:mod:`.results`)."""
