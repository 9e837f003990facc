"""A naive reference model of the DCQCN reaction point, written from the algorithm's statement
(docs/emulator.md, `transports.dcqcn`) and not from the compiled code: floats, an eager alpha tick per
interval, explicit timers processed in time order; rates in whole bits/s. The property test drives it and the compiled
functions with the same events and compares them."""
from __future__ import annotations

import math


class RefRP:
    def __init__(self, p: dict, line: float):
        self.p = p
        self.line = line
        self.rc = line  # current rate
        self.rt = line  # target rate
        self.alpha = None  # no rate limiter until the first CNP
        self.alpha_next = None  # end of the current alpha interval
        self.cnp_in_interval = False
        self.last_cut = None
        self.pending = False
        self.t_events = 0  # timer increases since the last cut
        self.b_events = 0  # byte-counter increases since the last cut
        self.raised_by_bc = False
        self.raised_by_timer = False
        self.timer_at = None
        self.bytes = 0

    # ------------------------------------------------------------ time
    def _due(self):
        """(time, what) of the earliest internal event, or None."""
        c = []
        if self.alpha_next is not None:
            c.append((self.alpha_next, 0))
        if self.pending:
            c.append((self.last_cut + self.p["dec"], 1))
        if self.timer_at is not None:
            c.append((self.timer_at, 2))
        return min(c) if c else None

    def advance(self, t):
        """Run every internal event due at or before t, in time order (alpha ticks first on ties)."""
        while True:
            d = self._due()
            if d is None or d[0] > t:
                return
            when, what = d
            if what == 0:
                g = self.p["g"]
                self.alpha = (1 - g) * self.alpha + (g if self.cnp_in_interval else 0.0)
                self.cnp_in_interval = False
                self.alpha_next += self.p["alpha_int"]
            elif what == 1:
                self._cut(when)
            else:
                self._raise(from_timer=True)
                if self.rc >= self.line and self.rt >= self.line:
                    self.timer_at = None
                else:
                    self.timer_at = when + self.p["inc"]

    # ------------------------------------------------------------ inputs
    def cnp(self, t):
        self.advance(t)
        if self.alpha is None:
            self.alpha = self.p["alpha_init"]
            self.alpha_next = t + self.p["alpha_int"]
        else:
            self.cnp_in_interval = True
        if self.last_cut is not None and t - self.last_cut < self.p["dec"]:
            self.pending = True
        else:
            self._cut(t)

    def sent(self, t, nbytes):
        self.advance(t)
        if self.p["bc"] <= 0 or self.rc >= self.line:
            return
        self.bytes += nbytes
        while self.bytes >= self.p["bc"]:
            self.bytes -= self.p["bc"]
            self._raise(from_timer=False)

    # ------------------------------------------------------------ the rules
    def _cut(self, t):
        if self.p["clamp"] or self.raised_by_bc or (self.p["clamp_time"] and self.raised_by_timer):
            self.rt = self.rc
        self.rc = max(self.p["min_rate"], math.floor(self.rc * (1 - self.alpha / 2)))  # whole bits/s, down
        self.last_cut = t
        self.pending = False
        self.t_events = self.b_events = 0
        self.raised_by_bc = self.raised_by_timer = False
        self.bytes = 0
        self.timer_at = t + self.p["inc"]

    def _raise(self, from_timer):
        before_t, before_b = self.t_events, self.b_events
        if from_timer:
            self.t_events += 1
            self.raised_by_timer = True
        else:
            self.b_events += 1
            self.raised_by_bc = True
        stages = (before_t, before_b) if self.p["bc"] > 0 else (before_t, before_t)
        F = self.p["F"]
        if max(stages) < F:
            pass  # fast recovery: the target stays
        elif min(stages) > F:
            self.rt = min(self.line, self.rt + (min(stages) - F) * self.p["rhai"])  # hyper increase
        else:
            self.rt = min(self.line, self.rt + self.p["rai"])  # additive increase
        self.rc = min(self.line, math.ceil((self.rt + self.rc) / 2))  # whole bits/s, up
