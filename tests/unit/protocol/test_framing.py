from __future__ import annotations

import itertools
import struct
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.protocol import framing
from strom.protocol.framing import (
    LARGE_FRAME,
    BytesLike,
    FrameDecoder,
    InvalidFrameSizeError,
    frame_prefix,
)


def framed(*payloads: bytes) -> bytes:
    return b"".join(frame_prefix(len(payload)) + payload for payload in payloads)


def test_whole_frame_in_one_feed() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    assert decoder.feed(framed(b"hello")) == [b"hello"]
    assert decoder.at_frame_boundary
    assert decoder.buffered == 0


def test_partial_feeds_byte_by_byte() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    data = framed(b"abc", b"defgh")
    out: list[BytesLike] = []
    for index in range(len(data)):
        out += decoder.feed(data[index : index + 1])
    assert out == [b"abc", b"defgh"]
    assert decoder.at_frame_boundary


def test_prefix_split_across_feeds() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    data = framed(b"xyz")
    assert decoder.feed(data[:2]) == []
    assert decoder.buffered == 2
    assert decoder.feed(data[2:5]) == []
    assert decoder.feed(data[5:]) == [b"xyz"]


def test_several_frames_and_a_partial_one_in_one_chunk() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    data = framed(b"one", b"", b"three") + framed(b"four")[:5]
    assert decoder.feed(data) == [b"one", b"", b"three"]
    assert decoder.buffered == 5
    assert not decoder.at_frame_boundary
    assert decoder.feed(b"our") == [b"four"]


def test_frame_of_exactly_the_maximum_is_accepted() -> None:
    decoder = FrameDecoder(max_frame_size=4)
    assert decoder.feed(framed(b"1234")) == [b"1234"]


def test_oversized_prefix_is_refused_before_its_bytes_arrive() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    with pytest.raises(InvalidFrameSizeError) as caught:
        decoder.feed(struct.pack(">i", 101))
    assert caught.value.size == 101
    assert caught.value.max_size == 100
    assert "101" in str(caught.value)
    assert "socket.request.max.bytes=100" in str(caught.value)


def test_oversized_frame_after_good_ones_in_the_same_chunk() -> None:
    decoder = FrameDecoder(max_frame_size=10)
    with pytest.raises(InvalidFrameSizeError) as caught:
        decoder.feed(framed(b"ok") + struct.pack(">i", 11))
    assert caught.value.size == 11


def test_negative_prefix_is_refused() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    with pytest.raises(InvalidFrameSizeError) as caught:
        decoder.feed(b"\xff\xff\xff\xfe")
    assert caught.value.size == -2
    assert "negative" in str(caught.value)


def test_decoder_stays_failed() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    with pytest.raises(InvalidFrameSizeError):
        decoder.feed(b"GET / HTTP/1.1\r\n")  # 0x47455420: over 100 MiB
    with pytest.raises(InvalidFrameSizeError):
        decoder.feed(framed(b"fine"))


def test_memoryview_and_bytearray_input() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    assert decoder.feed(memoryview(framed(b"a"))) == [b"a"]
    assert decoder.feed(bytearray(framed(b"b"))) == [b"b"]


@given(
    payloads=st.lists(st.binary(max_size=40), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_any_chunking_yields_the_same_frames(payloads: list[bytes], cuts: list[int]) -> None:
    data = framed(*payloads)
    points = sorted({0, len(data), *(cut for cut in cuts if cut < len(data))})
    decoder = FrameDecoder(max_frame_size=40)
    out: list[BytesLike] = []
    for start, end in itertools.pairwise(points):
        out += decoder.feed(data[start:end])
    assert out == payloads
    assert decoder.at_frame_boundary


@given(
    sizes=st.lists(
        st.sampled_from([0, 3, LARGE_FRAME - 1, LARGE_FRAME, 3 * LARGE_FRAME]), max_size=5
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=6 * LARGE_FRAME), max_size=12),
)
def test_large_frames_in_any_chunking_from_a_reused_buffer(
    sizes: list[int], cuts: list[int]
) -> None:
    """Large frames are copied into a buffer of their size: the result must not depend on how
    they were cut,
    nor keep a reference to a caller's buffer that is overwritten after ``feed``."""
    payloads = [bytes([index % 251]) * size for index, size in enumerate(sizes)]
    data = framed(*payloads)
    points = sorted({0, len(data), *(cut for cut in cuts if cut < len(data))})
    decoder = FrameDecoder(max_frame_size=3 * LARGE_FRAME)
    out: list[BytesLike] = []
    for start, end in itertools.pairwise(points):
        chunk = bytearray(data[start:end])
        out += decoder.feed(memoryview(chunk))
        assert decoder.buffered == end - sum(len(frame_prefix(0)) + len(frame) for frame in out)
        chunk[:] = b"\xff" * len(chunk)
    assert out == payloads
    assert decoder.at_frame_boundary


@given(
    sizes=st.lists(
        st.sampled_from([0, 3, LARGE_FRAME - 1, LARGE_FRAME, 3 * LARGE_FRAME]), max_size=5
    ),
    reads=st.lists(st.integers(min_value=1, max_value=6 * LARGE_FRAME), max_size=12),
)
def test_receiving_into_the_decoders_buffers(sizes: list[int], reads: list[int]) -> None:
    """``get_buffer``/``buffer_updated`` (a buffered protocol's receive) give the frames
    ``feed`` gives, whatever the size of each receive; a large frame's rest is received into
    the frame itself, and a frame handed out is read-only and never overwritten by later
    receives."""
    payloads = [bytes([index % 251]) * size for index, size in enumerate(sizes)]
    data = framed(*payloads)
    decoder = FrameDecoder(max_frame_size=3 * LARGE_FRAME)
    out: list[BytesLike] = []
    position = 0
    for want in itertools.chain(reads, itertools.repeat(LARGE_FRAME)):
        if position == len(data):
            break
        buffer = decoder.get_buffer()
        size = min(want, len(buffer), len(data) - position)
        buffer[:size] = data[position : position + size]
        position += size
        out += decoder.buffer_updated(size)
    assert [bytes(frame) for frame in out] == payloads
    assert decoder.at_frame_boundary
    for frame in out:
        if isinstance(frame, memoryview):
            assert frame.readonly


def test_large_frame_rest_is_received_in_place() -> None:
    decoder = FrameDecoder(max_frame_size=2 * LARGE_FRAME)
    payload = bytes(range(256)) * (LARGE_FRAME // 256 + 1)
    data = framed(payload)
    head = decoder.get_buffer()
    head[:100] = data[:100]
    assert decoder.buffer_updated(100) == []
    rest = decoder.get_buffer()
    assert len(rest) == len(payload) - 96  # exactly the frame's missing bytes
    rest[:] = data[100:]
    assert [bytes(frame) for frame in decoder.buffer_updated(len(rest))] == [payload]
    assert decoder.get_buffer() is head  # back to the scratch buffer


def _receive(decoder: FrameDecoder, data: bytes) -> list[BytesLike]:
    """Receive ``data`` as a buffered protocol does, in as few reads as the decoder allows."""
    out: list[BytesLike] = []
    position = 0
    while position < len(data):
        buffer = decoder.get_buffer()
        size = min(len(buffer), len(data) - position)
        buffer[:size] = data[position : position + size]
        position += size
        out += decoder.buffer_updated(size)
    return out


def test_a_large_frames_buffer_is_reused_once_nothing_refers_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new large frame is received into an earlier frame's buffer once the earlier frame
    is gone (no zero-filled new buffer per request), never while a view of it is held."""
    monkeypatch.setattr(framing, "_pool", framing._FramePool())  # none of other tests' buffers
    decoder = FrameDecoder(max_frame_size=4 * LARGE_FRAME)
    big, small = b"a" * (2 * LARGE_FRAME), b"b" * LARGE_FRAME
    (first,) = _receive(decoder, framed(big))
    assert isinstance(first, memoryview)
    (held,) = _receive(decoder, framed(small))  # ``first`` is held: another buffer
    assert isinstance(held, memoryview)
    # a new buffer, not the larger one ``first`` holds
    assert len(cast(bytearray, held.obj)) == len(small)
    assert bytes(first) == big
    del first
    (second,) = _receive(decoder, framed(small))  # ``first`` is gone: its buffer again
    assert isinstance(second, memoryview)
    assert len(cast(bytearray, second.obj)) == len(big)  # the buffer ``first`` had
    assert len(second) == len(small)  # only the frame, not the longer buffer behind it
    assert second.readonly
    assert bytes(second) == small
    assert bytes(held) == small
