"""A clock for tests that stamp events: every reading is one second after the last, so that
event times are exact and ordered. (Here, beside the root conftest, so that every suite can
import it.)"""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now
