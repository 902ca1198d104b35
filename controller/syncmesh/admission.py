"""What a peer may say: identity, origin and incarnation rules for every incoming message.

The peer's name comes from its session (its certificate), never from the
message. A switch speaks for its own link ends, and for the far end of a
link it sits on (it witnesses that link: a failure notice about a link comes
only from one of its two ends); nobody speaks for the receiver's own ports.
A spine publishes only its own profile. Incarnations are bounded: a peer's
own records and profile carry at most the incarnation of its session, a
relayed record at most the receiver's clock plus the allowed skew, and a
Hello never goes back to an older incarnation. Every check runs before
anything changes; a failed one raises ``Rejected`` with a reason the daemon
counts and logs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from fabricmodel import Fabric, Role

from .config import CoreConfig
from .incarnation import latest_allowed
from .linkstate import LinkStateTable, PortState
from .messages import Hello
from .peers import PeerTable
from .profiles import Profile

REASONS = ("forged", "incarnation", "no_session", "invalid")
"""Why a message is refused: it claims another origin; an incarnation replayed or from the
future; no session (no Hello first); anything else that breaks the protocol."""


class Rejected(Exception):
    """A peer's message that breaks the protocol; the state was left unchanged."""

    def __init__(self, detail: str, reason: str = "invalid"):
        assert reason in REASONS
        super().__init__(detail)
        self.reason = reason


class Admission:
    """The checks of one switch's daemon (shares the core's link and peer tables)."""

    def __init__(self, fabric: Fabric, me: str, config: CoreConfig, links: LinkStateTable,
                 peers: PeerTable):
        self.fabric = fabric
        self.me = me
        self.config = config
        self.links = links
        self.peers = peers
        self._spines = {s.name for s in fabric.switches if s.role is Role.SPINE}
        self._leaf_ids = {s.id for s in fabric.leaves}
        # a switch speaks for both ends of each of its links
        self._speakable = {s.name: 2 * len(fabric.links_of(s.name)) for s in fabric.switches}

    def may_speak(self, speaker: str, owner: str, port: int) -> bool:
        """True if ``speaker`` may assert the state of ``owner``'s link end ``port``."""
        if owner == speaker:
            return True
        lk = self.links.link_of(owner, port)
        return speaker in (lk.leaf.switch, lk.spine.switch)

    def most_states(self, speaker: str) -> int:
        """How many link-end records ``speaker`` can speak for (a message's upper bound)."""
        return self._speakable[speaker]

    def check_peer(self, peer: str) -> None:
        """``peer`` must be one of this switch's SyncMesh peers."""
        if peer not in self.peers.peers:
            if any(s.name == peer for s in self.fabric.switches):
                raise Rejected(f"{peer!r} is not a peer of {self.me!r}", "forged")
            raise Rejected(f"unknown switch {peer!r}", "forged")

    def session(self, peer: str) -> int:
        """The incarnation of ``peer``'s session; refuses messages before its Hello."""
        self.check_peer(peer)
        inc = self.peers.session_incarnation(peer)
        if inc is None:
            raise Rejected(f"no session with {peer}: the first message must be a Hello",
                           "no_session")
        return inc

    def _bounded(self, incarnation: int, now: float, where: str) -> None:
        if incarnation <= 0:
            raise Rejected(f"{where}: must be positive, got {incarnation}")
        bound = latest_allowed(now, self.config.max_skew)
        if incarnation > bound:
            raise Rejected(f"{where}: {incarnation} is later than this daemon's clock plus "
                           f"{self.config.max_skew:g} s ({bound})", "incarnation")

    def check_hello(self, peer: str, msg: Hello, now: float) -> None:
        """A Hello: bounded incarnation, never older than the peer's known one."""
        self.check_peer(peer)
        self._bounded(msg.incarnation, now, "hello.incarnation")
        known = self.peers.peers[peer].incarnation
        if msg.incarnation < known:
            raise Rejected(f"hello.incarnation: {msg.incarnation} is older than {peer}'s "
                           f"current {known} (replayed)", "incarnation")

    def check_states(self, peer: str, session: int, states: Iterable[PortState], now: float,
                     where: str) -> None:
        """Port states from ``peer``: fabric link ends it may speak for, once each, bounded."""
        states = tuple(states)
        if len(states) > self._speakable[peer]:
            raise Rejected(f"{where}: {len(states)} records, but {peer} speaks for at most "
                           f"{self._speakable[peer]}")
        seen = set()
        latest_time = now + self.config.max_skew
        for i, st in enumerate(states):
            at = f"{where}[{i}]"
            if not self.links.knows(st.switch, st.port):
                raise Rejected(f"{at}: {st.switch}:{st.port} is not a fabric link end")
            if (st.switch, st.port) in seen:
                raise Rejected(f"{at}: {st.switch}:{st.port} listed twice")
            seen.add((st.switch, st.port))
            if st.switch == self.me:
                raise Rejected(f"{at}: {peer} speaks for {self.me}'s own port {st.port}",
                               "forged")
            if not self.may_speak(peer, st.switch, st.port):
                raise Rejected(f"{at}: {peer} may not speak for {st.switch}:{st.port} (neither "
                               "its own port nor the far end of one of its links)", "forged")
            self._bounded(st.epoch.incarnation, now, f"{at}.epoch.incarnation")
            if st.switch == peer and st.epoch.incarnation > session:
                raise Rejected(f"{at}.epoch.incarnation: {st.epoch.incarnation} is newer than "
                               f"{peer}'s session incarnation {session}", "incarnation")
            if not (math.isfinite(st.detected_at) and 0 <= st.detected_at <= latest_time):
                raise Rejected(f"{at}.detected_at: bad time {st.detected_at}")

    def check_profile(self, peer: str, session: int, prof: Profile, delta: bool,
                      where: str) -> None:
        """A profile from ``peer``: a spine's own, of its session's incarnation, levels in range."""
        if prof.origin != peer:
            raise Rejected(f"{where}: a profile of {prof.origin!r} from {peer!r}", "forged")
        if peer not in self._spines:
            raise Rejected(f"{where}: only spines publish profiles, {peer!r} is a leaf",
                           "forged")
        if prof.version.incarnation != session:
            raise Rejected(f"{where}.version.incarnation: {prof.version.incarnation} is not "
                           f"{peer}'s session incarnation {session}", "incarnation")
        if prof.version.seq < 1 + int(delta):
            raise Rejected(f"{where}.version.seq: {prof.version.seq} too small")
        if prof.bits != self.config.level_bits:
            raise Rejected(f"{where}.bits: {prof.bits} differs from this daemon's "
                           f"{self.config.level_bits}")
        seen = set()
        for i, (dst, level) in enumerate(prof.levels):
            if dst not in self._leaf_ids:
                raise Rejected(f"{where}.entries[{i}].dst_leaf: no leaf with id {dst}")
            if dst in seen:
                raise Rejected(f"{where}.entries[{i}].dst_leaf: leaf {dst} listed twice")
            seen.add(dst)
            if not 0 <= level <= self.config.max_level:
                raise Rejected(f"{where}.entries[{i}].level: {level} out of range "
                               f"0..{self.config.max_level}")
