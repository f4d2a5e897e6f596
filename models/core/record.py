"""Field indices of flit records and of the integer statistics vector.

A flit travels as a fixed-width ``int32`` record (``NF`` fields); a packet
that crosses ranks travels as its records, so nothing about a flit lives
outside its record, the buffer slot that holds its record index, and the VC
state of that buffer.  Records sit in a per-part pool (``rec`` and ``rec_c``
in :mod:`pdes.state`: fields below ``NF_HOT`` and the others) while the flit
is in the part.  The cycle from which a buffered flit may be processed is
kept beside the buffers (``ib_rdy`` / ``oq_rdy``), not in the record.
"""

# ---- flit record fields
F_SRC = 0      # source endpoint (global id)
F_DST = 1      # destination endpoint (global id)
F_DSTR = 2     # destination router (global id)
F_SEQ = 3      # per-source packet sequence number: packet id = (F_SRC, F_SEQ)
F_FLIT = 4     # flit index inside the packet (tail = packet_size - 1)
F_HOPS = 5     # router-to-router links traversed so far (a head's last link counted when
               #   it is routed at the router the link leads to: in an input VC of a
               #   network port, a head not yet routed has not counted its link)
F_VC = 6       # VC of the channel the flit travels on / sits in: written when it enters
               #   the network, leaves the part (outbox) or is captured (checkpoint,
               #   failure); inside a part the output queues keep it (oq_vc)
F_PHASE = 7    # routing: phase (0 = towards F_MID or destination, 1 = towards destination)
# fields from NF_HOT on are "cold": minimal routing does not read them per hop
F_CTIME = 8    # creation cycle of the packet
F_ITIME = 9    # cycle the head flit left the source queue (network entry)
F_MID = 10     # routing: intermediate router (-1 = none; set by a routing kernel's source)
F_AUX = 11     # finite workloads: message index of the packet (read at ejection)
F_AUX2 = 12    # routing state, -1 at injection; its meaning is the routing kernel's
               #   (documented with each kernel under models/routing/)
NF_USED = 13
NF_HOT = 8      # the record pool keeps fields 0..7 and 8.. in two arrays of 32-byte rows
NF = 16        # width of a whole record outside the pool (endpoint templates, outboxes);
               # fields NF_USED.. are unused.  The pool stores fields 0..NF_HOT-1 and
               # NF_HOT..NF_USED-1 in two arrays of 8-field (32-byte) rows

# ---- statistics vector (int64), rank-local, reduced by summation (max for S_MAX*)
S_CREATED_PKTS = 0        # packets created (whole run)
S_CREATED_MEAS = 1        # packets created inside the measurement window
S_INJECTED_FLITS = 2      # flits that left source queues (whole run)
S_INJECTED_WIN = 3        # ... with injection cycle inside the window
S_DELIVERED_FLITS = 4     # flits delivered (whole run)
S_DELIVERED_WIN = 5       # ... with delivery cycle inside the window
S_DELIVERED_MEAS = 6      # measured packets delivered (tail arrived)
S_SUM_PLAT = 7            # sum of packet latency of measured packets (cycles)
S_SUM_NLAT = 8            # sum of network latency of measured packets
S_SUM_HOPS = 9            # sum of router-to-router hops of measured packets
S_MAX_PLAT = 10           # max packet latency (reduced with max)
S_MAX_NLAT = 11           # max network latency (reduced with max)
S_LAST_MOVE = 12          # last cycle any flit moved (reduced with max)
S_INFLIGHT = 13           # flits injected minus delivered on this rank (sums to the global count)
S_CREATED_WIN_FLITS = 14  # flits of packets created inside the window (offered load)
S_SUM_PLAT_SQ = 15        # sum of squared packet latency (for the standard deviation)
S_LAST_DELIVERY = 16      # last cycle a flit was delivered (reduced with max)
S_DROPPED_FLITS = 17      # flits of created packets lost to a failure (faults.at_cycle): removed
                          #   from the network, or never injected
S_DROPPED_PKTS = 18       # packets lost to a failure (a packet is delivered or dropped, not both)
S_DROPPED_MEAS = 19       # ... of them created inside the measurement window
NSTAT = 20
STAT_MAX = (S_MAX_PLAT, S_MAX_NLAT, S_LAST_MOVE, S_LAST_DELIVERY)

# ---- per-sample counters (int64), reset by the orchestrator every sample
C_DELIVERED = 0   # flits delivered in the sample
C_INJECTED = 1    # flits injected in the sample
C_CREATED = 2     # packets created in the sample
C_MOVES = 3       # flit movements (switch traversals + link sends)
NSAMPLE = 4

# ---- kernel status codes
OK = 0
ERR_VC = 1          # routing asked for a VC >= num_vcs
ERR_OUTBOX = 2      # outbox overflow (engine bug: window longer than lookahead)
ERR_ROUTE = 3       # routing found no output port (disconnected destination)
ERR_CREDIT = 4      # credit FIFO overflow (engine bug: more credits than buffer slots)
ERR_VC_ORDER = 5    # a hop asked for a lower VC class than the one it arrived on


# latency histograms: 1-cycle bins below ``latency_hist_max`` (H), then HIST_SUB log bins per
# octave [H 2^k, H 2^(k+1)) for k < HIST_OCTAVES (pdes.kernels.cycle.hist_bin)
HIST_SUB = 16
HIST_OCTAVES = 32
