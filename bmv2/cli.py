"""``simple_switch_CLI`` kept open on one BMv2's Thrift port.

Used for what BMv2's P4Runtime server does not do: registers (the packet tests'
``Bmv2Switch``). One process per switch, started once: a command then takes
milliseconds instead of a Python start-up.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

from . import tools

PROMPT = b"RuntimeCmd: "


class CliError(RuntimeError):
    """The CLI refused a command, died, or did not answer in time."""


class ThriftCli:
    """One simple_switch_CLI process talking to one switch."""

    def __init__(self, thrift_port: int, executable: Path | None = None) -> None:
        exe = executable or tools.require(tools.CLI, purpose="BMv2's Thrift CLI")[tools.CLI.name]
        self.proc = subprocess.Popen([str(exe), "--thrift-port", str(thrift_port)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._read_until_prompt(60.0)

    def _read_until_prompt(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        out = b""
        deadline = time.monotonic() + timeout
        while not out.endswith(PROMPT):
            left = deadline - time.monotonic()
            if left <= 0:
                raise CliError(f"simple_switch_CLI: no prompt within {timeout:g} s: "
                               f"{out.decode(errors='replace')[-300:]}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise CliError(f"simple_switch_CLI exited: {out.decode(errors='replace')[-300:]}")
                out += chunk
        return out[: -len(PROMPT)].decode(errors="replace")

    def run(self, command: str, timeout: float = 30.0) -> str:
        """The CLI's answer to one command; CliError when it reports an error."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        answer = self._read_until_prompt(timeout)
        if "Error" in answer or "Invalid" in answer:
            raise CliError(f"simple_switch_CLI {command!r}: {answer.strip()[-300:]}")
        return answer

    def close(self) -> None:
        """End the CLI."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
