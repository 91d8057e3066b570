"""``diagnose watch --prometheus URL --latency-query PROMQL``: the service's P99, read from
the team's own Prometheus at each capture through its HTTP API (``/api/v1/query``), with
the standard library alone (docs/watch.md, "Latency drift").

The query must give one number: a scalar, or an instant vector of one series (a query that
returns several is aggregated by its author, e.g. ``max(...)``). It is in seconds, as
Prometheus's histograms are; the reading is kept in milliseconds. Credentials in the URL
(``http://user:pw@host``) are sent as HTTP Basic authentication, and the URL is only ever
shown or recorded through :func:`~diagnose.collect.redact.redact_text`.
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from diagnose.collect.redact import redact_text
from diagnose.errors import UsageError

#: seconds one query may take (connection and answer): a capture never waits longer
TIMEOUT_S = 5.0
#: an answer larger than this is no single number
MAX_RESPONSE_BYTES = 1 << 20
API_PATH = "/api/v1/query"


class NoReading(Exception):
    """This capture gets no P99 (Prometheus unreachable, no series, NaN): the capture goes on."""


class QueryRejected(NoReading):
    """Prometheus refused the query, or its result can never be one number (a range vector,
    a string): a mistake of the command line, not of the moment."""


@dataclass(frozen=True)
class Reading:
    """One capture's P99 in milliseconds, or None and why not."""

    p99_ms: float | None
    note: str = ""


def parse_value(doc: Any) -> float:
    """The one number of a ``/api/v1/query`` answer (parsed JSON), in the query's unit;
    :class:`NoReading` (or :class:`QueryRejected`) saying why there is none."""
    if not isinstance(doc, dict) or doc.get("status") not in ("success", "error"):
        raise NoReading("the answer is not a Prometheus API response")
    if doc["status"] == "error":
        what, error = str(doc.get("errorType") or "error"), str(doc.get("error") or "")[:300]
        if what == "bad_data":
            raise QueryRejected(f"Prometheus rejected the query: {error}")
        raise NoReading(f"Prometheus answered {what}: {error}")
    data = doc.get("data")
    kind = data.get("resultType") if isinstance(data, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    if kind == "scalar":
        value = result
    elif kind == "vector" and isinstance(result, list):
        if not result:
            raise NoReading("the query returned no series (no requests, or no such metric yet)")
        if len(result) > 1:
            raise NoReading(
                f"the query returned {len(result)} series: aggregate them to one, e.g. max(...)"
            )
        value = result[0].get("value") if isinstance(result[0], dict) else None
    elif kind in ("matrix", "string"):
        raise QueryRejected(
            f"the query gives a {kind}, not one number: use an instant query, such as "
            "histogram_quantile(0.99, sum by (le) (rate(METRIC_bucket[1m])))"
        )
    else:
        raise NoReading(f"the answer's result is malformed (resultType {kind!r})")
    return _sample(value)


def _sample(value: Any) -> float:
    """``[timestamp, "number"]`` -> the number (finite, not negative)."""
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], str):
        raise NoReading("the answer's sample is malformed")
    try:
        x = float(value[1])
    except ValueError:
        raise NoReading(f"the answer's value {value[1][:40]!r} is not a number") from None
    if math.isnan(x):
        raise NoReading("the query's value is NaN (no requests in its window?)")
    if not math.isfinite(x) or x < 0:
        raise NoReading(f"the query's value is {value[1][:40]}, not a latency")
    return x


@dataclass(frozen=True)
class LatencyQuery:
    """Where and what to ask: the base URL as given, and the PromQL."""

    url: str
    query: str
    timeout_s: float = TIMEOUT_S

    @classmethod
    def from_options(cls, url: str, query: str, timeout_s: float = TIMEOUT_S) -> LatencyQuery:
        """Check ``--prometheus`` and ``--latency-query``: :class:`UsageError` (exit 2)."""
        parts = urllib.parse.urlsplit(url.strip())
        try:
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            port_ok = False
        if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
            raise UsageError(
                "--prometheus takes Prometheus's base URL, such as http://127.0.0.1:9090, "
                f"not {redact_text(url)!r}"
            )
        if parts.fragment:
            raise UsageError(f"--prometheus: a URL without #fragment, not {redact_text(url)!r}")
        if not query.strip():
            raise UsageError("--latency-query needs a PromQL query giving the P99 in seconds")
        return cls(url.strip(), query.strip(), timeout_s)

    @property
    def shown(self) -> str:
        """The URL as it may be printed or recorded: credentials redacted."""
        return redact_text(self.url)

    @property
    def source(self) -> str:
        """What compare shows as the figures' source."""
        return redact_text(f"Prometheus {self.url}: {self.query}")

    def request(self) -> urllib.request.Request:
        parts = urllib.parse.urlsplit(self.url)
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if parts.port is not None:
            netloc += f":{parts.port}"
        query = urllib.parse.urlencode({"query": self.query})
        if parts.query:
            query += "&" + parts.query
        path = parts.path.rstrip("/") + API_PATH
        url = urllib.parse.urlunsplit((parts.scheme, netloc, path, query, ""))
        req = urllib.request.Request(url)  # noqa: S310 - http(s) only (from_options)
        if parts.username is not None:
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        req.add_header("Accept", "application/json")
        return req

    def ask(self) -> float:
        """The query's value now (seconds); :class:`NoReading` saying why there is none."""
        try:
            with urllib.request.urlopen(self.request(), timeout=self.timeout_s) as resp:  # noqa: S310 - http(s) only (from_options)
                body = resp.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:  # 400 and 422 carry the API's error document
            body = exc.read(MAX_RESPONSE_BYTES + 1) if exc.fp is not None else b""
            if not body.lstrip().startswith(b"{"):
                raise NoReading(f"Prometheus at {self.shown} answered HTTP {exc.code}") from None
        except (OSError, ValueError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise NoReading(f"Prometheus at {self.shown} unreachable: {reason}") from None
        if len(body) > MAX_RESPONSE_BYTES:
            raise NoReading("the answer is too large to be one number")
        try:
            doc = json.loads(body)
        except ValueError:
            raise NoReading(f"Prometheus at {self.shown} did not answer JSON") from None
        return parse_value(doc)

    def read(self) -> Reading:
        """This capture's P99 in milliseconds, or None with the reason."""
        try:
            return Reading(round(self.ask() * 1000.0, 3))
        except NoReading as exc:
            return Reading(None, redact_text(str(exc)))

    def check(self) -> Reading:
        """The first reading, at the start: a query Prometheus rejects is a
        :class:`UsageError` (exit 2); an unreachable Prometheus is only a reading's note."""
        try:
            return Reading(round(self.ask() * 1000.0, 3))
        except QueryRejected as exc:
            raise UsageError(f"--latency-query: {redact_text(str(exc))}") from None
        except NoReading as exc:
            return Reading(None, redact_text(str(exc)))
