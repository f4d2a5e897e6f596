"""`pdes analyze` on networks at the edge of what its sections define: a router price that is
negative at the network's radix (refused before any work, naming --router-coeffs), a network
that is disconnected before any link fails (resiliency left out of the default sections)."""
import json


def test_negative_router_price_names_the_option(run_pdes):
    r = run_pdes("analyze", "slimfly", "--set", "topology.q=5", "--only", "resiliency,cost",
                 "--samples", "2", "--router-coeffs", "1,-1000")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert lines == ["pdes: error: --router-coeffs: the router price 1 k - 1000 is negative "
                     "for k = 11"], r.stderr
    assert r.stdout == ""


def test_router_price_not_checked_without_cost(run_pdes):
    r = run_pdes("analyze", "slimfly", "--set", "topology.q=5", "--only", "paths",
                 "--router-coeffs", "1,-1000")
    assert r.returncode == 0, r.stderr


def test_default_fit_names_the_way_out(run_pdes):
    """The default price fit is negative for radix 2: the whole analysis is refused before any
    work, saying how to price that radix or leave cost out."""
    r = run_pdes("analyze", "hyperx", "--set", "topology.sizes=[2]", "--set", "topology.p=1")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (
        "pdes: error: --router-coeffs: the router price 350.4 k - 892.3 is negative for k = 2 "
        "(the default fit); price this radix with --router-coeffs, or leave cost out with --only")
    r = run_pdes("analyze", "hyperx", "--set", "topology.sizes=[2]", "--set", "topology.p=1",
                 "--only", "paths")
    assert r.returncode == 0, r.stderr


def test_disconnected_network_omits_resiliency(run_pdes, tmp_path):
    """The default sections leave resiliency out of a disconnected network and say why (text and
    JSON); asked for alone, it is refused. A network without endpoints divides the cut by R/2."""
    edges = tmp_path / "two.edges"
    edges.write_text("0 1\n1 2\n3 4\n4 5\n")
    net = ("file", "--set", f"topology.path={edges}",
           "--set", "topology.format=edgelist", "--set", "topology.p=1")
    r = run_pdes("analyze", *net)
    assert r.returncode == 0, r.stderr
    assert "resiliency: connected" not in r.stdout and any(
        ln.split() == ["resiliency", "not", "computed:", "the", "network", "is", "disconnected",
                       "before", "any", "link", "fails"] for ln in r.stdout.splitlines())
    rep = json.loads(run_pdes("analyze", *net, "--json").stdout)
    assert "resiliency" not in rep["analyses"] and "bisection" in rep["analyses"]
    assert rep["omitted"] == {"resiliency": "the network is disconnected before any link fails"}
    r = run_pdes("analyze", *net, "--only", "resiliency")
    assert r.returncode == 2 and "disconnected before any link fails" in r.stderr
    r = run_pdes("analyze", "slimfly", "--set", "topology.q=5", "--set", "topology.p=0",
                 "--only", "bisection")
    assert r.returncode == 0 and "beta = C/(R/2)" in r.stdout, r.stderr
    rep = json.loads(run_pdes("analyze", "slimfly", "--set", "topology.q=5", "--json",
                              "--only", "paths").stdout)
    assert "omitted" not in rep
