"""Interaction files written for the data tests (sessions format)."""

import gzip

from tfrec_tricks.data.sources import named_sources

HEADER = "SessionId\tItemId\tTime\n"


def sessions(session, count=4, start=0):
    """``count`` clicks of ``session`` on items ``i<start>``..., one a
    second."""
    return "".join(
        f"{session}\ti{start + k}\t{100 + k}\n" for k in range(count)
    )


def write_file(path, text, compress=False):
    """Writes ``text`` (gzipped if ``compress``) to ``path``; its str."""
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)
    return str(path)


def load_table(pattern, file_format="auto", **kwargs):
    """``load_source("file")`` of ``pattern``."""
    return named_sources.load_source(
        "file", data_path=pattern, file_format=file_format, **kwargs
    )


def shard_files(tmp_path, count=11):
    """Shard k holds session s<k>: the table's user order is shard order."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for k in range(1, count + 1):
        write_file(folder / f"part-{k}.tsv", HEADER + sessions(f"s{k}"))
    return str(folder / "part-*.tsv")
