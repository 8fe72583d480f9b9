"""Run one command and report its wall time and peak memory: `python -S spawn.py OUT ERR TIMEOUT CMD...`.

Why a separate, tiny process: on Linux a child's ru_maxrss starts from the memory of the process that
forked it (exec records the old address space's high-water mark), so a child forked by the benchmark
runner, which holds numpy, pyarrow and generated data, would be charged for the runner's memory too.
Forked from this small launcher the charge is a few MB, under any Python process's own peak. The
child's stdout and stderr go to the files OUT and ERR; one JSON line goes to this process's stdout:
{"wall": seconds from fork to reaping, "maxrss": bytes, "rc": exit code (negative: killed by signal),
"cpu": the child's user + system CPU seconds}.
"""

import json
import os
import signal
import sys
import time


def main() -> None:
    out, err, timeout, cmd = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            for path, fd in ((out, 1), (err, 2)):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
            os.execvp(cmd[0], cmd)
        except OSError as e:
            os.write(2, f"cannot run {cmd[0]}: {e}\n".encode())
        os._exit(127)
    signal.signal(signal.SIGALRM, lambda *_: os.kill(pid, signal.SIGKILL))
    signal.setitimer(signal.ITIMER_REAL, timeout)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    signal.setitimer(signal.ITIMER_REAL, 0)
    rc = os.waitstatus_to_exitcode(status)
    print(json.dumps({"wall": wall, "maxrss": usage.ru_maxrss * 1024, "rc": rc,
                      "cpu": usage.ru_utime + usage.ru_stime}))


if __name__ == "__main__":
    main()
