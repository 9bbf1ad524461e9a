"""Clocks for tests (here, beside the root conftest, so that every suite can import them):
`Clock`, for tests that stamp events: every reading is one second after the last, so that
event times are exact and ordered; `ManualClock`, which moves only when a test moves it."""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class ManualClock:
    """The loop's and the store's clock: it moves only when a test moves it."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now
