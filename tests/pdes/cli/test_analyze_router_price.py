"""A router price that is negative at the network's radix is refused before any work, naming
--router-coeffs, with the price written as 'a k - b'."""


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
