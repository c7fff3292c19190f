"""The CPU's model name, as the benchmarks' reports record it (Linux's /proc/cpuinfo,
else what platform knows)."""

import platform


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
