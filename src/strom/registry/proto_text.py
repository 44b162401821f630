"""Protobuf schemas given as ``.proto`` text (as Java clients and people register them),
compiled to a ``FileDescriptorProto`` by ``protoc`` itself (the compiler that ``grpcio-tools``
ships as a Python extension). ``protoc`` reads files, so the text and its imports are written to
a temporary directory for the compile; imports registered as descriptors reach it as a
descriptor set."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from google.protobuf import descriptor_pb2

from strom.registry.schema_types import InvalidSchemaError

__all__ = ["compile_proto"]

_lock = threading.Lock()  # protoc's in-process entry point is not known to be reentrant


def compile_proto(
    text: str,
    name: str,
    text_imports: Sequence[tuple[str, str]],
    descriptor_imports: Sequence[descriptor_pb2.FileDescriptorProto],
) -> descriptor_pb2.FileDescriptorProto:
    """The descriptor of ``.proto`` ``text`` saved as ``name``, with its imports: .proto texts
    by import path, and descriptors; 42201's ``InvalidSchemaError`` when it does not compile."""
    from grpc_tools import protoc  # noqa: PLC0415 - a large extension, loaded on first use

    well_known = str(Path(protoc.__file__).parent / "_proto")
    with tempfile.TemporaryDirectory(prefix="strom-proto-") as work:
        root = Path(work, "src")
        for path, source in [*text_imports, (name, text)]:
            target = root / path
            if not target.resolve().is_relative_to(root.resolve()):
                raise InvalidSchemaError(f"import path {path!r} leaves the source tree")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source)
        out = Path(work, "out.pb")
        args = ["protoc", f"-I{root}", f"-I{well_known}", f"--descriptor_set_out={out}"]
        if descriptor_imports:
            given = Path(work, "imports.pb")
            given.write_bytes(
                descriptor_pb2.FileDescriptorSet(file=descriptor_imports).SerializeToString()
            )
            args.append(f"--descriptor_set_in={given}")
        with _lock:
            status = protoc.main([*args, name])
        if status != 0 or not out.exists():
            raise InvalidSchemaError(f"the .proto text does not compile (protoc exit {status})")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    for file in files:
        if file.name == name:
            return file
    raise InvalidSchemaError("protoc produced no descriptor for the schema")
