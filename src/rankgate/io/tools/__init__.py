"""The files the RAG tools write (RAGAS, DeepEval, LlamaIndex datasets, the sample contract), read as records and
turned into a gold set and a run."""
