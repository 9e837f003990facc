"""Cases the reference implementation fails today because of bugs in mrc/core (or mrc/ctl): real findings.

Each reason says what is wrong and where; the reference run marks them strict xfail, so the day the core is
fixed the suite says so. They are not weakened: a conforming implementation must pass them.
"""
KNOWN_REFERENCE_FAILURES = {
    "responder.write-extent-checked":
        "core bug: responder.on_data checks each packet's own payload against the R_Key region (_lookup_mr), not "
        "the message's extent (RETH va + dma_len), so the in-range FIRST packet of a write that runs past the "
        "region is placed before the MIDDLE packet is refused",
    "responder.wimm-error-nak[no-recv]":
        "core bug: responder._deliver puts the QP in ERROR (ERR_NO_RECV) without queuing a NAK (aeth_pending), "
        "so the requester learns only when its retries run out",
    "responder.wimm-error-nak[overflow]":
        "core bug: responder.on_data puts the QP in ERROR (ERR_WIMM_OVERFLOW) without queuing a NAK "
        "(aeth_pending), so the requester learns only when its retries run out",
    "requester.dead-plane-keeps-spraying":
        "core bug: evset.rebalance caps every plane's active set at one more than the plane with the fewest "
        "usable EVs, so when every EV of one plane is ASSUMED_BAD the other plane drops to a single active EV",
    "controller.good-event-after-marked-probe":
        "core bug: evset.ev_input reports GOOD only for ASSUMED_BAD -> GOOD and DENIED -> GOOD; an EV whose probe "
        "answer is ECN-marked goes ASSUMED_BAD -> SKIP -> GOOD and is never reported GOOD, so the controller "
        "still believes it failed",
    "nscc.max-cwnd":
        "ctl/core bug: the CC profile's max_cwnd does not bound the initial window: ctl._cc_config keeps "
        "nscc_profile's init_cwnd (one BDP) when max_cwnd is set lower, and nscc.cc_init starts at init_cwnd "
        "without clamping, so the first burst exceeds max_cwnd",
}
