"""What rankgate knows about one version of a corpus: its chunks, their documents, versions,
status and content hashes (:class:`CorpusManifest`), and how two versions differ (:class:`CorpusDiff`)."""

from __future__ import annotations

from rankgate.corpus.manifest import STATUSES, ChunkRecord, CorpusDiff, CorpusManifest, load_manifest, manifest_from_records

__all__ = ["STATUSES", "ChunkRecord", "CorpusDiff", "CorpusManifest", "load_manifest", "manifest_from_records"]
