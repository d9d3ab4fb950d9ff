"""The seam between the protocol and the network: a :class:`Transport` carries bytes, nothing else.

A transport implements two methods:

* :meth:`Transport.connect` -- which sites of the plan are up (waiting up to ``wait_s``);
* :meth:`Transport.exchange` -- deliver one query's bytes to each named site and return its
  reply's bytes, or a :class:`Failure` (a fixed reason, never the peer's text);

and may implement :meth:`Transport.exchange_each`, which takes the queries one at a time and yields
each reply as it arrives, so that the run adds each reply to its sums and drops it (the aggregator's
memory does not grow with the number of sites): the in-process, gRPC and Flower transports do (the
last two build each query when there is room to send it: ``SEND_WINDOW``, ``WINDOW``); the default
waits for :meth:`Transport.exchange`.

Everything else is written once, here and in :mod:`.run`: encoding and decoding
(:mod:`.messages`), the spy's transcript (shapes only), and the rule that a reply must
come from the site it names and answer the query it was sent for (its plan, step and
round); a reply that does not decode, or names another site, stops the run with
:class:`~.messages.MessageRefused`. Implementations: :class:`InProcessTransport` (the
default; sites are objects in this process), :mod:`dpmoments.multisite.flower` (Flower SuperLink and
SuperNodes) and :mod:`.grpc_transport` (plain gRPC with mutual TLS).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, Optional, Union

from .messages import MessageRefused, Query, Reply, SiteError, describe, from_wire, to_wire

if TYPE_CHECKING:  # for the hints only: the plan and the site import nothing of the transport
    from .plan import Plan
    from .site import Site

__all__ = ["Transport", "InProcessTransport", "Failure", "FAILURES"]

#: Why a site gave no reply, as a transport may say it (fixed words: a peer's text never travels on).
FAILURES = ("crashed", "timeout", "unreachable")


@dataclass(frozen=True)
class Failure:
    """No reply from a site: ``reason`` is one of :data:`FAILURES`."""

    reason: str

    def __post_init__(self) -> None:
        if self.reason not in FAILURES:
            raise ValueError(f"'reason' must be one of {FAILURES}; got {self.reason!r}.")

    def __str__(self) -> str:
        return self.reason


class Transport:
    """Base class: subclasses implement :meth:`connect` and :meth:`exchange`."""

    name = "transport"

    def __init__(self) -> None:
        self.transcript: list[dict] = []  # describe(): who sent what shapes to whom, never the values
        self.reasons: dict[str, str] = {}  # site -> why it is not in connect()'s answer (a fixed code), where known

    def connect(self, plan: Plan, wait_s: float) -> list[str]:  # pragma: no cover - interface
        """The names of the plan's sites that are up, in plan order."""
        raise NotImplementedError

    def exchange(self, messages: Mapping[str, bytes],
                 timeout_s: float) -> dict[str, Union[bytes, Failure]]:  # pragma: no cover - interface
        """``{site: bytes}`` out; ``{site: bytes or Failure}`` back (a missing site counts as a timeout)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the transport holds (connections, servers); idempotent."""

    def note(self, message: Any, sender: str, receiver: str) -> None:
        self.transcript.append(describe(message, sender, receiver))

    def exchange_each(self, messages: Iterable[tuple[str, bytes]],
                      timeout_s: float) -> Iterator[tuple[str, Union[bytes, Failure]]]:
        """``(site, bytes)`` pairs out, read one at a time; ``(site, bytes or Failure)`` back as each arrives.

        The default waits for :meth:`exchange`; a transport that can hand over each reply as it comes
        overrides this, so that no more than a few messages are held at once.
        """
        yield from self.exchange(dict(messages), timeout_s).items()

    def ask(self, queries: Mapping[str, Query], timeout_s: float) -> dict[str, Union[Reply, SiteError, Failure]]:
        """Send each site its :class:`~.messages.Query`; return ``{site: Reply, SiteError or Failure}``."""
        return dict(self.ask_each(queries, timeout_s))

    def ask_each(self, queries: Mapping[str, Query],
                 timeout_s: float) -> Iterator[tuple[str, Union[Reply, SiteError, Failure]]]:
        """Send each site its query (each built and encoded when it is sent); yield ``(site, Reply, SiteError or
        Failure)`` as each answer arrives, once for every site asked (a site that never answers: a timeout)."""
        tags: dict[str, tuple] = {}

        def wire() -> Iterator[tuple[str, bytes]]:
            for site in queries:
                query = queries[site]
                tags[site] = (query.plan, query.step, query.round_id)
                self.note(query, "aggregator", site)
                yield site, to_wire(query)

        answered = set()
        for site, data in self.exchange_each(wire(), timeout_s):
            if site not in tags or site in answered:
                continue  # a transport's stray or repeated delivery: the first answer stands
            answered.add(site)
            if isinstance(data, Failure):
                yield site, data
                continue
            answer = self._decode(site, tags[site], data)
            if isinstance(answer, Reply):
                self.note(answer, site, "aggregator")
            yield site, answer
        for site in tags:
            if site not in answered:
                yield site, Failure("timeout")

    @staticmethod
    def _decode(site: str, query: Union[Query, tuple], data: bytes) -> Union[Reply, SiteError]:
        """``query``: the query, or its ``(plan, step, round_id)``."""
        def refuse(reason: str, text: str) -> NoReturn:
            raise MessageRefused(f"aggregator refused a message from site {site!r} ({reason}): {text} No release "
                                 "is made from this run.", site=site, reason=reason)

        try:
            msg = from_wire(data, kinds=("Reply", "SiteError"))
        except ValueError:
            refuse("wrong-payload", "it does not decode as a reply tagged with its plan and round.")
        if not isinstance(msg, (Reply, SiteError)):  # from_wire refused the other kinds; this tells the type checker
            refuse("wrong-payload", "it does not decode as a reply tagged with its plan and round.")
        if msg.site != site:
            refuse("forged", f"the transport delivered it from site {site!r} but it names site {msg.site!r}.")
        tag = query if isinstance(query, tuple) else (query.plan, query.step, query.round_id)
        if isinstance(msg, SiteError) and (msg.plan, msg.step, msg.round_id) != tag:
            plan, step, round_id = tag
            return SiteError(site, plan, step, round_id, msg.code)  # an error: no payload to trust
        return msg


class InProcessTransport(Transport):
    """Sites as objects in this process (the default, and what the tests drive).

    Parameters
    ----------
    sites : iterable of Site, or dict of name -> callable(bytes) -> bytes
        Each site's door (:meth:`~.site.Site.handle`).
    failures : dict of str -> "after-deal", optional
        Sites that crash once the shares are dealt (their replies never come).
    """

    name = "in-process"

    def __init__(self, sites: Union[Iterable[Site], Mapping[str, Callable[[bytes], bytes]]],
                 failures: Optional[Mapping[str, str]] = None) -> None:
        super().__init__()
        self.handlers = dict(sites) if isinstance(sites, Mapping) else {s.name: s.handle for s in sites}
        self.failures = dict(failures or {})

    def connect(self, plan: Plan, wait_s: float = 0.0) -> list[str]:
        return [s for s in plan.sites if s in self.handlers]

    def exchange(self, messages: Mapping[str, bytes], timeout_s: float) -> dict[str, Union[bytes, Failure]]:
        return dict(self.exchange_each(messages.items(), timeout_s))

    def exchange_each(self, messages: Iterable[tuple[str, bytes]],
                      timeout_s: float) -> Iterator[tuple[str, Union[bytes, Failure]]]:
        """Each site asked when its query is read, its reply handed back at once (one message at a time)."""
        for site, data in messages:
            if self.failures.get(site) == "after-deal":
                yield site, Failure("crashed")
                continue
            start = time.monotonic()
            try:
                reply = self.handlers[site](data)
            except Exception:  # a site that raises has crashed; its text is not ours to forward
                yield site, Failure("crashed")
                continue
            # sites answer one after another here; each gets the whole timeout, as if asked at once
            yield site, (reply if time.monotonic() - start <= timeout_s else Failure("timeout"))
