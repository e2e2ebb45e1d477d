"""What a run file is called and which version this ln-viz writes, and the one error a refused file
raises: the leaf of the run file package, which the document (reading, writing) and the validator both
import."""

from __future__ import annotations

from ln_viz.i18n import LocalizedError, t

FORMAT = "ln-viz-run"
FORMAT_VERSION = 1


class RunFileError(LocalizedError):
    """A run file ln-viz refuses: one sentence. `cause` is a nested error whose sentence is the reason."""

    def __init__(self, key: str, *, cause: LocalizedError | None = None, **params: object) -> None:
        self.cause = cause
        if cause is not None:
            params["reason"] = str(cause)
        super().__init__(key, **params)

    def message(self, lang: str = "en") -> str:
        if self.cause is None:
            return super().message(lang)
        return t(self.key, lang, **{**self.params, "reason": self.cause.message(lang)})
