"""``python -m agentgrammar`` is the ``agentgrammar`` command line."""

from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_runs_the_command_line() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentgrammar",
            "check",
            "--format",
            "tags",
            "<response>Hi!</response>",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert '"valid": true' in out.stdout and '"response": "Hi!"' in out.stdout
