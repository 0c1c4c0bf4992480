"""Starting a queen-sidecar from Python (imported, not run): the Python twin of
scripts/lib/sidecar.sh, the one place in Python that knows how a sidecar is started in the
background and how its ready line gives its port. Every Python test, the fault campaigns and
bench/shards use it (tests/integration/http_helpers.py re-exports start_sidecar).

  start_sidecar(binary, log_path, args=(), wait_s=10, append=False)
      starts binary --listen 127.0.0.1:0 args... (a --listen among args wins: sidecar flags are
      last-wins), stdout and stderr to log_path (emptied first, or appended to with append=True),
      and waits up to wait_s seconds for its ready line ("queen-sidecar ready: listening on
      127.0.0.1:N ..."; with append, the first one written after this start). Returns
      (process, port); the caller keeps the process and ends it. Raises RuntimeError (the
      process killed) when it dies or never gets ready. The environment reaches the sidecar as
      usual (QUEEN_DEDUP_CACHE=0, PG*).
  Sidecar(name, binary, conninfo, workdir, extra, port=None)
      a sidecar the fault campaigns SIGKILL and start again: always on the same fixed port
      (a free one unless given), flags --pg conninfo extra..., log <workdir>/sidecar-<name>.log
      appended over its restarts.
  private_copy(binary, workdir)
      a copy of the binary of the run's own (a rebuild during a long run must not change or
      remove it); returns its path.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import time

# The ready line's port, as scripts/lib/sidecar.sh's sidecar_ready_port reads it.
READY = re.compile(r"queen-sidecar ready: listening on 127\.0\.0\.1:([0-9]+)[^0-9]")


def ready_port(text):
    """The port of the first ready line in text, else None."""
    m = READY.search(text)
    return int(m.group(1)) if m else None


def start_sidecar(binary, log_path, args=(), wait_s=10, append=False):
    """See the module's docstring."""
    offset = os.path.getsize(log_path) if append and os.path.exists(log_path) else 0
    log = open(log_path, "a" if append else "w")
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", *args],
                            stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        with open(log_path, errors="replace") as f:
            f.seek(offset)
            txt = f.read()
        port = ready_port(txt)
        if port is not None:
            return proc, port
        if proc.poll() is not None:
            raise RuntimeError("sidecar died: " + txt)
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError("sidecar never became ready")


def free_port():
    """A TCP port of 127.0.0.1 free at this moment."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def private_copy(binary, workdir):
    """See the module's docstring."""
    path = os.path.join(workdir, "queen-sidecar")
    shutil.copy2(binary, path)
    return path


class Sidecar:
    """A sidecar a campaign kills and starts again on the same port (see the module's docstring)."""

    def __init__(self, name, binary, conninfo, workdir, extra, port=None):
        self.name, self.binary, self.conninfo = name, binary, conninfo
        self.port = port or free_port()
        self.logpath = os.path.join(workdir, "sidecar-%s.log" % name)
        self.extra = extra
        self.proc = None

    def start(self):
        """Start it on its port; waits for its ready line (raises when it dies or never gets ready)."""
        self.proc, _ = start_sidecar(self.binary, self.logpath,
                                     ["--listen", "127.0.0.1:%d" % self.port, "--pg", self.conninfo,
                                      *self.extra], append=True)

    def kill(self):
        """SIGKILL, and reap it."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        """SIGKILL it if it runs (the end of a campaign)."""
        if self.proc and self.proc.poll() is None:
            self.kill()
