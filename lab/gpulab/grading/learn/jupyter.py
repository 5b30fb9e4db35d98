"""JupyterLab for a workspace: one server per workspace, started or reused, reachable over SSH.

`open_notebook` starts the workspace's JupyterLab server if it is not running
(as root too: ``--allow-root`` when the user is root, the usual case in
containers and on rented GPU machines), waits until it answers, opens the
notebook in a web browser where there is a display, and returns its address
with the token and the ``ssh -L`` line that reaches it from another machine.
The server is started through a short-lived launcher process, so it is never
a child of the caller: the caller returns at once, leaves no zombie behind,
and the server outlives it. `stop_server` stops it (``gpulab open --stop``).

The server listens on 127.0.0.1 only, on a free port, with a token gpulab
makes; what gpulab knows of it (pid, port, token, log) is kept in
``<state>/jupyterlab/<workspace hash>.json``, and its output goes to the
``.log`` beside it; ``<state>/jupyterlab/config/`` holds the page config that
leaves out JupyterLab's "Jupyter news?" toast. A server that dies while
starting is reported with the last lines of its log.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from gpulab.errors import GpulabError
from gpulab.multicast import NO_MULTICAST
from gpulab.state import state_dir

if TYPE_CHECKING:
    from gpulab.course.workspace import Workspace

__all__ = [
    "JupyterError",
    "Opened",
    "Server",
    "install_hint",
    "open_notebook",
    "running_server",
    "stop_server",
]

START_TIMEOUT = 90.0
"""Seconds a new server has to answer before it is stopped and reported."""

DISABLED_PLUGINS = ("@jupyterlab/apputils-extension:announcements",)
"""JupyterLab plugins gpulab's server goes without: the announcements plugin asks every
new user whether to fetch Jupyter's news (a toast that is noise to a learner, on a machine
that may have no way out). Disabled in the server's page config (`_lab_config`)."""

# Started by the launcher process, which exits at once: the server is then no child of
# the caller (nothing to reap, no zombie) and has a session of its own.
_LAUNCHER = """\
import os, subprocess, sys
log = open(sys.argv[1], "ab")
server = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=log,
                          stderr=subprocess.STDOUT, start_new_session=True)
print(server.pid, flush=True)
os._exit(0)
"""


class JupyterError(GpulabError):
    """JupyterLab is missing, did not start, or could not be stopped."""


@dataclass(frozen=True)
class Server:
    """A workspace's JupyterLab server, as gpulab started it."""

    pid: int
    port: int
    token: str
    root: str
    log: str

    def url(self, relative: str = "") -> str:
        """The address of a file of the workspace in JupyterLab, with the token."""
        path = f"lab/tree/{quote(relative)}" if relative else "lab"
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    @property
    def ssh(self) -> str:
        """The command that forwards the server's port from another machine."""
        return f"ssh -N -L {self.port}:127.0.0.1:{self.port} {_user()}@{_host()}"


@dataclass(frozen=True)
class Opened:
    """A notebook opened in JupyterLab: where, and how it went."""

    server: Server
    url: str
    reused: bool  # the server was running already
    browser: bool | None  # a web browser was asked to open the address; None: not wanted
    note: str = ""  # e.g. that an earlier server had died, with its log's end

    def lines(self) -> list[str]:
        """What to tell the learner, a line each."""
        started = "JupyterLab is running" if self.reused else "JupyterLab started"
        out = [f"{started} (pid {self.server.pid}) for {self.server.root}"]
        if self.note:
            out.append(self.note)
        out.append(f"open: {self.url}")
        if self.browser is False:
            out.append("no web browser here (no display): open the address above in yours.")
        out.append(f"from another machine, first run there: {self.server.ssh}")
        out.append("stop it with: gpulab open --stop")
        return out


def install_hint() -> str:
    """The command that installs JupyterLab into gpulab's environment."""
    return f"{sys.executable} -m pip install jupyterlab"


def running_server(workspace: Workspace) -> Server | None:
    """The workspace's server if it is running and answers; None otherwise."""
    server = _load(workspace)
    if server is None or not _alive(server.pid) or not _answers(server):
        return None
    return server


def open_notebook(
    workspace: Workspace, notebook: Path, *, browser: bool = True, timeout: float = START_TIMEOUT
) -> Opened:
    """Open `notebook` (a file of the workspace) in the workspace's JupyterLab.

    Starts the server if it is not running; raises `JupyterError` (with the end of
    the server's log) if it cannot be started.
    """
    try:
        relative = notebook.resolve().relative_to(workspace.root)
    except ValueError:
        raise JupyterError(f"{notebook} is not in the workspace {workspace.root}") from None
    note = ""
    server = _load(workspace)
    reused = server is not None and _alive(server.pid) and _answers(server)
    if not reused:
        if server is not None:
            note = _died_note(server)
            _stop(server)
        server = _start(workspace, timeout)
    assert server is not None
    url = server.url("" if relative == Path() else relative.as_posix())
    shown = (_has_display() and _open_browser(url)) if browser else None
    return Opened(server, url, reused, shown, note)


def stop_server(workspace: Workspace) -> Server | None:
    """Stop the workspace's server (and its kernels); the server stopped, or None."""
    server = _load(workspace)
    if server is None:
        return None
    _stop(server)
    return server


def _start(workspace: Workspace, timeout: float) -> Server:
    if importlib.util.find_spec("jupyterlab") is None:
        raise JupyterError(
            f"JupyterLab is not installed beside gpulab; install it with {install_hint()}"
        )
    folder = _folder()
    log = folder / f"{_key(workspace)}.log"
    server = Server(
        pid=0,
        port=_free_port(),
        token=secrets.token_hex(24),
        root=str(workspace.root),
        log=str(log),
    )
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--ServerApp.root_dir={workspace.root}",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={server.port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={server.token}",
        # a course machine may have no way out: no news or update checks to wait on
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if os.geteuid() == 0:  # JupyterLab refuses root unless told, and says so only in its log
        command.append("--allow-root")
    try:
        log.write_text(f"gpulab: {' '.join(command[:3])} for {workspace.root}\n", encoding="utf-8")
        config = [str(_lab_config(folder)), os.environ.get("JUPYTER_CONFIG_PATH", "")]
        launched = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(log), *command],
            cwd=workspace.root,
            capture_output=True,
            text=True,
            timeout=30,
            env={
                **os.environ,
                **NO_MULTICAST,
                "JUPYTER_CONFIG_PATH": os.pathsep.join(filter(None, config)),
            },
        )
        pid = int(launched.stdout.strip())
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise JupyterError(f"JupyterLab could not be started: {exc}") from None
    server = Server(pid, server.port, server.token, server.root, server.log)
    _save(workspace, server)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            _forget(workspace)
            raise JupyterError(
                f"JupyterLab stopped as it started; the end of its log ({log}):\n{_tail(log)}"
            )
        if _answers(server):
            return server
        time.sleep(0.25)
    _stop(server)
    _forget(workspace)
    raise JupyterError(
        f"JupyterLab did not answer within {timeout:g} s and was stopped; "
        f"the end of its log ({log}):\n{_tail(log)}"
    )


def _stop(server: Server, grace: float = 10.0) -> None:
    """Stop the server's process group: SIGTERM, then SIGKILL after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if not _alive(server.pid):
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, sig)
        deadline = time.monotonic() + wait
        while _alive(server.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
    if _alive(server.pid):
        raise JupyterError(f"JupyterLab (pid {server.pid}) could not be stopped")
    path = _folder() / f"{_key_of(Path(server.root))}.json"
    with contextlib.suppress(OSError):
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == server.pid:
            path.unlink()


def _died_note(server: Server) -> str:
    if _alive(server.pid):
        return f"the earlier server (pid {server.pid}) did not answer and was stopped."
    return (
        f"the earlier server (pid {server.pid}) had stopped; the end of its log:\n"
        f"{_tail(Path(server.log))}"
    )


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not)."""
    if pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _answers(server: Server) -> bool:
    """Whether the server answers its status page with our token."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/api/status",
        headers={"Authorization": f"token {server.token}"},
    )
    try:
        with _no_proxy().open(request, timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError, ValueError):
        return False


def _no_proxy() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _has_display() -> bool:
    if sys.platform == "darwin":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _open_browser(url: str) -> bool:
    import webbrowser

    try:
        return webbrowser.open(url, new=2)
    except webbrowser.Error:
        return False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(log: Path, lines: int = 15) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"    (the log cannot be read: {exc.strerror or exc})"
    return "\n".join(f"    {line}" for line in text.strip().splitlines()[-lines:])


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "you"


def _host() -> str:
    return socket.gethostname() or "this-machine"


def _lab_config(folder: Path) -> Path:
    """A Jupyter configuration folder under `folder` whose labconfig/page_config.json
    disables `DISABLED_PLUGINS`; the server finds it on JUPYTER_CONFIG_PATH, beside the
    user's own configuration (raises OSError when it cannot be written)."""
    config = folder / "config"
    page = config / "labconfig" / "page_config.json"
    page.parent.mkdir(parents=True, exist_ok=True)
    disabled = dict.fromkeys(DISABLED_PLUGINS, True)
    page.write_text(json.dumps({"disabledExtensions": disabled}, indent=1), encoding="utf-8")
    return config


def _folder() -> Path:
    folder = state_dir() / "jupyterlab"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JupyterError(f"cannot make {folder}: {exc.strerror or exc}") from None
    return folder


def _key_of(root: Path) -> str:
    return hashlib.sha256(str(root).encode()).hexdigest()[:16]


def _key(workspace: Workspace) -> str:
    return _key_of(workspace.root)


def _load(workspace: Workspace) -> Server | None:
    path = state_dir() / "jupyterlab" / f"{_key(workspace)}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Server(
            int(data["pid"]),
            int(data["port"]),
            str(data["token"]),
            str(data["root"]),
            str(data["log"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _save(workspace: Workspace, server: Server) -> None:
    path = _folder() / f"{_key(workspace)}.json"
    try:  # readable by the user alone: the token opens the server
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(asdict(server), indent=1) + "\n")
    except OSError as exc:
        raise JupyterError(f"cannot write {path}: {exc.strerror or exc}") from None


def _forget(workspace: Workspace) -> None:
    with contextlib.suppress(OSError):
        (state_dir() / "jupyterlab" / f"{_key(workspace)}.json").unlink()
