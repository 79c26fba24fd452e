"""Progress of pelab.train and pelab.sweep through Python's sys.stdout (docs/python.md).

The commands print from C++ to the process's file descriptors 1 and 2, which a notebook cell or
`contextlib.redirect_stdout` never sees. While a command runs, `forwarded` points descriptor 1 (and 2) at
a pipe and a thread writes each line it reads to sys.stdout (sys.stderr), or hands it to a `progress`
callable; `cells` follows a sweep's cells, separate processes that write to their own stdout.log, and
forwards each new line as "[CELL] line". Standard library only.
"""

import contextlib
import io
import os
import sys
import threading

_POLL = 0.2  # seconds between looks at the cells' logs


def _own(stream, fd):
    """True when `stream` writes to descriptor `fd` itself (a terminal, a file): nothing to forward."""
    try:
        return stream.fileno() == fd
    except (AttributeError, OSError, ValueError):  # StringIO, a notebook's stream: io.UnsupportedOperation
        return False


def _lines(read, emit):
    """Reads chunks with read() until b"" and calls emit(line) for each line (without its newline)."""
    rest = b""
    while True:
        chunk = read()
        if not chunk:
            break
        rest += chunk
        *done, rest = rest.split(b"\n")
        for line in done:
            emit(line.decode("utf-8", "replace").rstrip("\r"))
    if rest:
        emit(rest.decode("utf-8", "replace"))


def _writer(stream):
    def emit(line):
        stream.write(line + "\n")
        stream.flush()
    return emit


@contextlib.contextmanager
def _pipe_fd(fd, emit):
    """Descriptor `fd` into a pipe whose lines a thread hands to emit(line), until the block ends."""
    saved = os.dup(fd)
    r, w = os.pipe()
    os.dup2(w, fd)
    os.close(w)
    thread = threading.Thread(target=_lines, args=(lambda: os.read(r, 65536), emit), daemon=True)
    thread.start()
    try:
        yield saved
    finally:
        os.dup2(saved, fd)  # closes the pipe's last write end: the thread reads to the end and stops
        os.close(saved)
        thread.join(timeout=10)
        os.close(r)


@contextlib.contextmanager
def forwarded(progress=None):
    """Descriptors 1 and 2 forwarded to sys.stdout and sys.stderr where those are not the descriptors
    themselves; descriptor 1 to progress(line) instead when progress is given."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: expected a callable progress(line), got {type(progress).__name__}")
    with contextlib.ExitStack() as stack:
        for fd, name in ((1, "stdout"), (2, "stderr")):
            stream = getattr(sys, name)
            if stream is None or (_own(stream, fd) and not (fd == 1 and progress)):
                continue
            stream.flush()
            emit = progress if fd == 1 and progress else _writer(stream)
            saved = stack.enter_context(_pipe_fd(fd, emit))
            if _own(stream, fd):  # Python's own prints (a progress that prints) go where fd 1 went, not round
                real = io.TextIOWrapper(io.FileIO(saved, "w", closefd=False), line_buffering=True)
                stack.enter_context(contextlib.redirect_stdout(real))
        yield


@contextlib.contextmanager
def cells(sweep_dir, progress=None):
    """While the block runs (and once more after it), each new line of SWEEP_DIR/CELL/stdout.log as
    "[CELL] line" to progress(line), else sys.stdout. Lines already there when it starts are skipped."""
    emit = progress or (lambda line: _writer(sys.stdout)(line))
    offsets, partial = {}, {}

    def logs():
        try:
            names = sorted(os.listdir(sweep_dir))
        except OSError:
            return []
        return [(n, os.path.join(sweep_dir, n, "stdout.log")) for n in names
                if os.path.isfile(os.path.join(sweep_dir, n, "stdout.log"))]

    def scan():
        for name, path in logs():
            try:
                with open(path, "rb") as f:
                    f.seek(offsets.get(name, 0))
                    data = f.read()
            except OSError:
                continue
            offsets[name] = offsets.get(name, 0) + len(data)
            *done, partial[name] = (partial.get(name, b"") + data).split(b"\n")
            for line in done:
                emit(f"[{name}] " + line.decode("utf-8", "replace").rstrip("\r"))

    if sweep_dir is None:
        yield
        return
    for name, path in logs():
        offsets[name] = os.path.getsize(path)
    stop = threading.Event()

    def follow():
        while not stop.wait(_POLL):
            scan()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        scan()
