"""Human labels as a workflow: the queue a person labels, the database the labels are kept in, the agreement
between people, and the labels written back in the shapes rankgate reads (``rankgate label``, docs/labels.md).

``queue.py`` reads every queue rankgate writes (``pool``, ``gold sample``, ``judge relevance``'s input, lists of
answers to verdict) into one kind of item; ``scales.py`` holds the grading scales; ``store.py`` is the SQLite
database (one file, WAL: each label committed as it is given); ``export.py`` writes the labels for
``evaluate --judged``, ``judge calibrate --human``, ``answers --human`` and the gold set; ``agreement.py`` measures
annotators against each other and against a judge; ``app.py`` (Starlette, the ``label`` extra) is the page a person
labels in, ``pages.py`` its HTML. Nothing here imports Starlette until the app is built, so ``import rankgate`` and
``label export`` stay light.
"""
