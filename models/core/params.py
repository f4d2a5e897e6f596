"""Slots of the engine's int64 parameter vector ``prm``, which every stage and routing
kernel receives (the engine fills it from the config: :class:`pdes.state.PartState`,
:func:`pdes.build.make_parts`).

A routing kernel reads the slots it needs (``prm[PR_SEED]`` for its draws, the
pipeline offsets for latency estimates); the engine owns their values.
"""
PR_NV = 0          # VCs per port
PR_OQCAP = 1       # flits per output queue
PR_PKT = 2         # flits per packet
PR_CD = 3          # credit delay
PR_RD = 4          # cycles from a head's arrival to its first VC allocation  } the pipeline's
PR_VAD = 5         # cycles from VC allocation to switch allocation (>= 1)    } offsets
PR_SAD = 6         # cycles from switch allocation to leaving the router      } (pdes.timing)
PR_SPEEDUP = 7     # flits per cycle per input and per output of the crossbar
PR_ELAT = 8        # endpoint channel latency
PR_SEED = 9
PR_THR = 10        # 53-bit threshold of the per-cycle packet generation draw
PR_M0 = 11         # measurement window [M0, M1) (creation / delivery cycle)
PR_M1 = 12
PR_HMAX = 13       # latency histogram: 1-cycle bins below this, log bins above (hist_bin)
PR_TRAFFIC = 14    # traffic kind
PR_E = 15          # endpoints in the whole network
PR_FOCAP = 16      # flit outbox capacity per cut channel
PR_COCAP = 17      # credit outbox capacity per cut channel
PR_INJECT = 18     # 1 = endpoints generate packets, 0 = no new packets
PR_FRAC_THR = 19   # 53-bit threshold of the traffic mix draw
PR_NCLS = 20       # VC classes of the routing; class c owns VCs [c*k, (c+1)*k), k = nv // ncls
PR_MONO = 21       # 1 = the engine checks that VC classes never decrease along a path
PR_FINITE = 22     # 1 = finite workload: endpoints send the messages of msg_* instead of Bernoulli;
                   #   2 = a schedule (pdes.kernels.schedule): operations with dependencies
PR_SCHED = 23      # finite: 0 = all messages posted at once (packets interleaved round-robin),
                   #         1 = staggered (one message after the other, in table order)
PR_NHMIN = 24      # minimal next-hop table of the part (pdes.kernels.nexthop): 0 = none (scan the
                   # distance rows), 1 = masks in tab.nh_min, 2 = ports in tab.nh_port ...
PR_CHX = 25        # cycles every channel (link, endpoint, credit) adds to its latency
PR_ECD = 26        # credit delay of the credits returned to a source endpoint
PR_HOT = 27        # hot planes of the rings: slots below it are slot-major (every VC has them)
PR_PRIV = 28       # 0 = private buffers; > 0 = shared buffers, each VC owning this many flits
PR_NHMULTI = 29    # the value of a tab.nh_port entry with several minimal ports (PR_NHMIN = 2)
PR_PF = 30         # 1 = the stages prefetch through their pipelines (set each cycle from PR_PFMIN)
PR_ONOFF = 31      # injection process: 0 = Bernoulli (PR_THR per cycle), 1 = on/off (PR_THR while on)
PR_ALPHA_THR = 32  # on/off: 53-bit threshold of the off -> on draw
PR_BETA_THR = 33   # on/off: 53-bit threshold of the on -> off draw
# router.allocation = "booksim" (pdes.kernels.iq): BookSim2's input-queued router per step
PR_ALLOC = 34      # 0 = pdes's allocation (once per cycle, virtual cut-through); 1 = BookSim's
PR_SX = 35         # steps per cycle (internal speedup) with PR_ALLOC, else 1: ready stamps and
                   # iv_va_at / iv_sa_at count steps t * PR_SX + j
PR_HRDY = 36       # a head's ready stamp after its arrival (PR_RD, or steps with PR_ALLOC)
PR_RDEL = 37       # routing_delay, vc_alloc_delay, sw_alloc_delay, st_delay in cycles
PR_VDEL = 38
PR_SDEL = 39
PR_XDEL = 40
PR_VALG = 41       # VC and switch allocators (pdes.kernels.iq.AL_*) and their iterations
PR_SALG = 42
PR_VITERS = 43
PR_SITERS = 44
PR_HOLD = 45       # 1 = hold_switch_for_packet: a packet keeps its switch path until its tail
PR_WAITTAIL = 46   # 1 = wait_for_tail_credit: an output VC is free once its tail's credit is back
PR_VCANY = 47      # 1 = routing.vcs "any": every hop's class is 0 (PR_NCLS = 1: one class, every VC)
PR_FAULT = 48      # faults.at_cycle: 1 before the failure (input VCs keep the id of the packet
                   # routed through them, iv_psrc/iv_pseq); 2 from the failure on: a head
                   # routed to a failed port (ports.port_down) or that no route, VC or class
                   # order fits is dropped with its packet (iv_out = IV_DISCARD until its
                   # tail), instead of ERR_*; 0 without a failure during the run
PR_ISX = 49        # router.input_speedup (booksim allocation): switch inputs per input port,
                   # VC v uses input v mod PR_ISX (<= PR_NV); 1 otherwise
PR_OCC = 50        # 1 = the input-port occupancy bitmap (inb.ip_occ) matches ib_cnt; 0 = the next
                   # kernel call builds it first (a new part, or Python changed the buffers)
PR_KEYED = 51      # 1 = srcs.ep_key holds the endpoints' injection-draw keys for seed PR_KEYSEED;
PR_KEYSEED = 52    #   0 = the next kernel call computes them (pdes.kernels.injection.build_keys)
PR_SNAP = 53       # the routing's snapshot epoch when the window loop takes the snapshots itself
                   # (tab.snap after every cycle t with (t + 1) % PR_SNAP == 0: a run of one
                   # part in one process, pdes.loop); 0: Python takes them between windows
PR_PFMIN = 54      # the window loop sets PR_PF before each cycle: 1 while the part holds at least
                   # this many flits (records in use), else 0 (int64 max: never)
PR_EJCLS = 55     # 1 = routing.eject_vcs "class" (booksim allocation): a head to an endpoint
                   # requests the VCs of the class the routing gives the ejection hop (the
                   # Dragonfly's: BookSim's phase, models.routing.dragonfly); 0 = any VC of it
NPRM = 56

NEVER = 2147483647  # iv_sa_at / iv_va_at of a VC with nothing to do (int32 max)
IV_DISCARD = -2     # iv_out of an input VC that drops the rest of its packet (PR_FAULT)
