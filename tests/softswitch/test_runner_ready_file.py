"""`softswitch run --ready-file`: whoever waits for the file reads it whole or not at all."""

import threading
from pathlib import Path

from softswitch.runner import write_whole

ROUNDS = 2000


def test_a_reader_never_sees_the_ready_file_in_part(tmp_path: Path) -> None:
    path = tmp_path / "ready"
    text = "127.0.0.1:40123\n"
    seen: list[str] = []
    done = threading.Event()

    def reader() -> None:  # what the tests and the testbed do: wait for it to exist, read it
        while not done.is_set():
            if path.exists():
                try:
                    got = path.read_text()
                except FileNotFoundError:  # removed between exists() and the read
                    continue
                if got != text:
                    seen.append(got)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(ROUNDS):
            write_whole(path, text)
            path.unlink()
    finally:
        done.set()
        t.join()
    assert not seen, f"read in part {len(seen)} times, e.g. {seen[0]!r}"
    write_whole(path, text)
    assert path.read_text() == text
    assert [p.name for p in tmp_path.iterdir()] == ["ready"]  # no temporary file left
