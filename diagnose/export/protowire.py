"""The protobuf wire format, writing only: varints and length-delimited fields, all that
pprof's profile.proto uses (https://protobuf.dev/programming-guides/encoding/)."""

from __future__ import annotations

from collections.abc import Iterable

_VARINT = 0
_LEN = 2
_MASK64 = (1 << 64) - 1


def varint(n: int) -> bytes:
    """Base-128 varint; a negative int64 as its 64-bit two's complement (ten bytes)."""
    n &= _MASK64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class Message:
    """One message being written, fields in the order they are added. Scalar fields equal
    to zero are left out, as proto3 writes them."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def number(self, field: int, value: int) -> Message:
        if value:
            self.buf += varint(field << 3 | _VARINT) + varint(value)
        return self

    def blob(self, field: int, data: bytes) -> Message:
        """A length-delimited field, written even when empty (string_table[0] is "")."""
        self.buf += varint(field << 3 | _LEN) + varint(len(data)) + data
        return self

    def text(self, field: int, text: str) -> Message:
        # proto3 strings must be UTF-8: a lone surrogate from a hostile name is replaced
        return self.blob(field, text.encode("utf-8", "replace"))

    def nested(self, field: int, sub: Message) -> Message:
        return self.blob(field, bytes(sub.buf))

    def packed(self, field: int, values: Iterable[int]) -> Message:
        payload = b"".join(varint(v) for v in values)
        if payload:
            self.blob(field, payload)
        return self

    def __bytes__(self) -> bytes:
        return bytes(self.buf)
