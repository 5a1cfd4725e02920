"""bench/limit.py: the execution limit every bench prints (issue 46): the
CPU-bound rate of each core, measured on our workload, and the share."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _limit():
    spec = importlib.util.spec_from_file_location("limit", ROOT / "bench" / "limit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_share_line_divides_the_rate_by_the_busy_cycles():
    line = _limit().share_line("idle", 2e6, 50.0, rate=1e9)
    assert "2.00 M busy cycles" in line and "limit 500x" in line and "10.0 % of it" in line


def test_both_cores_have_a_cpu_bound_rate():
    lim = _limit()
    m4, m0 = lim.cpu_rate("m4"), lim.cpu_rate("m0")
    assert m4 > 1e7 and m0 > 1e7
    assert lim.cpu_rate("m4") == m4          # measured once


def test_every_bench_prints_its_share_of_the_limit():
    """Issue 46: every bench prints its workload's share of its execution
    limit (share_line, or a table of its own from cpu_rate: bench_air's)."""
    missing = [p.name for p in sorted((ROOT / "bench").glob("bench_*.py"))
               if "share_line(" not in p.read_text() and "cpu_rate(" not in p.read_text()]
    assert not missing, f"no share of the execution limit printed by {missing}"
