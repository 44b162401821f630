"""The errors a statement can get before it runs, each naming where and what (ksqlDB's
`ParsingException`: "line L:C: message")."""

from __future__ import annotations


class SqlError(Exception):
    """A statement strom cannot accept; its message is the one the user sees."""


class SqlSyntaxError(SqlError):
    """Text that is not ksqlDB's language: where (1-based line and column), what was found
    (`found`, `<EOF>` at the end), and the tokens that could have stood there (`expected`)."""

    def __init__(
        self,
        *,
        line: int,
        column: int,
        found: str,
        expected: tuple[str, ...] = (),
        detail: str = "",
    ) -> None:
        self.line = line
        self.column = column
        self.found = found
        self.expected = expected
        self.detail = detail
        super().__init__(self._message())

    def _message(self) -> str:
        if self.detail:
            return f"line {self.line}:{self.column}: {self.detail}"
        head = f"line {self.line}:{self.column}: Syntax Error"
        if not self.expected:
            return f"{head}\nUnexpected {self.found}"
        return f"{head}\nExpecting {', '.join(self.expected)}, got {self.found}"


class SqlSemanticError(SqlError):
    """A statement that reads well but means nothing against the sources it names: an unknown
    source or column, operands of types that do not go together (ksqlDB's KsqlException)."""
