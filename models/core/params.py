"""Slots of the engine's int64 parameter vector ``prm``, which every stage and routing
kernel receives (the engine fills it from the config, :mod:`pdes.engine`).

A routing kernel reads the slots it needs (``prm[PR_SEED]`` for its draws, the
pipeline offsets for latency estimates); the engine owns their values.
"""
PR_NV = 0          # VCs per port
PR_VCCAP = 1       # most flits of an input VC (each port's own: ports.in_cap, ports.cr_cap)
PR_OQCAP = 2       # flits per output queue
PR_PKT = 3         # flits per packet
PR_CD = 4          # credit delay
PR_RD = 5          # cycles from a head's arrival to its first VC allocation  } the pipeline's
PR_VAD = 6         # cycles from VC allocation to switch allocation (>= 1)    } offsets
PR_SAD = 7         # cycles from switch allocation to leaving the router      } (pdes.timing)
PR_STD = 8         # added to PR_SAD (0: pdes.timing folds it in)
PR_SPEEDUP = 9     # flits per cycle per input and per output of the crossbar
PR_ELAT = 10       # endpoint channel latency
PR_SEED = 11
PR_THR = 12        # 53-bit threshold of the per-cycle packet generation draw
PR_M0 = 13         # measurement window [M0, M1) (creation / delivery cycle)
PR_M1 = 14
PR_HMAX = 15       # latency histogram: 1-cycle bins below this, log bins above (hist_bin)
PR_TRAFFIC = 16    # traffic kind
PR_E = 17          # endpoints in the whole network
PR_FOCAP = 18      # flit outbox capacity per cut channel
PR_COCAP = 19      # credit outbox capacity per cut channel
PR_INJECT = 20     # 1 = endpoints generate packets, 0 = no new packets
PR_FRAC_THR = 21   # 53-bit threshold of the traffic mix draw
PR_NCLS = 22       # VC classes of the routing; class c owns VCs [c*k, (c+1)*k), k = nv // ncls
PR_MONO = 23       # 1 = the engine checks that VC classes never decrease along a path
PR_FINITE = 24     # 1 = finite workload: endpoints send the messages of msg_* instead of Bernoulli
PR_SCHED = 25      # finite: 0 = all messages posted at once (packets interleaved round-robin),
                   #         1 = staggered (one message after the other, in table order)
PR_NHMIN = 26      # minimal next-hop table of the part (pdes.kernels.nexthop): 0 = none (scan the
                   # distance rows), 1 = masks in tab.nh_min, 2 = ports in tab.nh_port ...
PR_CHX = 27        # cycles every channel (link, endpoint, credit) adds to its latency
PR_ECD = 28        # credit delay of the credits returned to a source endpoint
PR_HOT = 29        # hot planes of the rings: slots below it are slot-major (every VC has them)
PR_PRIV = 30       # 0 = private buffers; > 0 = shared buffers, each VC owning this many flits
PR_NHMULTI = 31    # the value of a tab.nh_port entry with several minimal ports (PR_NHMIN = 2)
PR_PF = 32         # 1 = the router and output stages prefetch through their pipelines
NPRM = 33

NEVER = 2147483647  # iv_sa_at / iv_va_at of a VC with nothing to do (int32 max)
