"""The web dashboard in a real headless Chromium (Debian's `chromium` and `chromedriver`,
driven by selenium) against one real `shoal up` with the local executor: pages load and
show what the API says for a small scenario — the virtual-cluster tree's numbers, each
GPU's holder, a waiting job's reason, a job's log, the usage report — a job submitted
through the API shows up in the open jobs list, a non-admin sees no admin controls, and an
admin cordons a node from its page (the API then shows it Cordoned, the audit log says so).
One browser and one server for the module; every wait is on a condition of the page.
Screenshots of each page are written under the test's temporary directory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait
from shoal_documents import job_yaml, node_yaml, virtual_cluster_yaml
from shoal_up_process import Up, shoal_up, until
from test_shoal_up import kill_leftover_tasks

T = TypeVar("T")
WAIT_S = 60.0
"""A safety net only: every wait ends as soon as the page shows what it waits for."""

CLUSTER = (node_yaml("gpu-a") + "---\n" + node_yaml("gpu-b") + "---\n"
           + virtual_cluster_yaml("team-a", "{min: {gpu: 1}}"))
HOLDER_LINE = "hello from the holder"
YAML = {"Content-Type": "application/yaml"}


@dataclass
class Dashboard:
    up: Up
    driver: WebDriver
    shots: Path
    tokens: dict[str, str]
    who: str | None = None

    def api(self, method: str, path: str, who: str = "admin", **kwargs: object) -> httpx.Response:
        return httpx.request(method, f"{self.up.url}{path}", timeout=30,
                             headers={"Authorization": f"Bearer {self.tokens[who]}",
                                      **kwargs.pop("headers", {})},  # type: ignore[dict-item]
                             **kwargs)  # type: ignore[arg-type]

    def wait(self, what: str, check: Callable[[WebDriver], T]) -> T:
        # A page redraws itself (a click's answer, a refresh): an element read meanwhile is
        # stale, and the check runs again on the new one.
        return WebDriverWait(self.driver, WAIT_S, poll_frequency=0.1,
                             ignored_exceptions=[StaleElementReferenceException]
                             ).until(check, what)

    def login(self, who: str) -> None:
        """Log in through the login form (logging out first when another user is in)."""
        if self.who == who:
            return
        self.driver.get(f"{self.up.url}/#/tree")
        self.driver.execute_script("sessionStorage.clear()")
        self.driver.refresh()
        field = self.wait("the login form", lambda d: d.find_element(By.ID, "token"))
        field.send_keys(self.tokens[who])
        self.driver.find_element(By.CSS_SELECTOR, "#login button[type=submit]").click()
        self.wait("the navigation", lambda d: d.find_element(By.ID, "nav").is_displayed())
        me = self.api("GET", "/api/v1/users/me", who).json()
        self.wait("the user's name", lambda d: d.find_element(By.ID, "who").text.startswith(
            me["name"]))
        self.who = who

    def open(self, route: str, ready: str) -> None:
        """Show `#/route` and wait until the CSS selector `ready` matches."""
        self.driver.get(f"{self.up.url}/#/{route}")
        self.wait(f"{ready} on #/{route}",
                  lambda d: d.find_elements(By.CSS_SELECTOR, ready) or None)

    def text(self, selector: str) -> str:
        return str(self.driver.find_element(By.CSS_SELECTOR, selector).text)

    def shot(self, name: str) -> None:
        path = self.shots / f"{name}.png"
        assert self.driver.save_screenshot(str(path)), path
        assert path.stat().st_size > 1000


def chromium() -> WebDriver:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1280,800"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    home = tmp_path_factory.mktemp("dashboard")
    (home / "cluster.yaml").write_text(CLUSTER)
    shots = tmp_path_factory.mktemp("screenshots")
    try:
        with shoal_up(home) as up:
            tokens = {"admin": up.token}
            made = httpx.post(f"{up.url}/api/v1/users", timeout=30,
                              headers={"Authorization": f"Bearer {up.token}"},
                              json={"name": "alice", "queues": ["default", "team-a"]})
            assert made.status_code == 201, made.text
            tokens["alice"] = made.json()["token"]
            driver = chromium()
            try:
                board = Dashboard(up, driver, shots, tokens)
                scenario(board)
                yield board
            finally:
                driver.quit()
    finally:  # tasks outlive their server: `holder` would sleep on
        kill_leftover_tasks(home / ".shoal")


def scenario(board: Dashboard) -> None:
    """alice's `holder` runs on one GPU of team-a and prints a line; `waiter` (a gang of
    four one-GPU tasks) waits for the GPU that `holder` holds."""
    holder = job_yaml("holder", queue="team-a", replicas=1, gpu=1, cpu="1", memory="256Mi",
                      command=f"[/bin/sh, -c, 'echo {HOLDER_LINE}; exec sleep 600']")
    waiter = job_yaml("waiter", replicas=4, gpu=1, cpu="1", memory="256Mi",
                      command="[/bin/true]")
    for text in (holder, waiter):
        answer = board.api("POST", "/api/v1/jobs", "alice", content=text, headers=YAML)
        assert answer.status_code == 201, answer.text
    until("holder running", lambda: board.api("GET", "/api/v1/jobs/holder").json()
          ["status"]["state"] == "Running")
    until("the scheduler's view of holder", lambda: board.api("GET", "/api/v1/cluster").json()
          ["used"].get("gpu") == 1)
    until("waiter's reason", lambda: board.api("GET", "/api/v1/jobs/waiter").json()
          ["status"]["pendingReason"])


def test_the_tree_shows_the_clusters_usage(dashboard: Dashboard) -> None:
    dashboard.login("admin")
    dashboard.open("tree", "#vc-tree [data-vc='team-a']")
    root = dashboard.api("GET", "/api/v1/cluster").json()
    assert root["used"].get("gpu") == 1 and root["guaranteed"].get("gpu") == 4, root
    assert "1/4 GPUs used" in dashboard.text(f"[data-vc='{root['name']}'] .usage")
    assert dashboard.text("[data-vc='team-a'] .usage") == "1 GPUs used, 1 guaranteed, max -"
    assert "jobs 1 running, 0 waiting" in dashboard.text("[data-vc='team-a']")
    dashboard.shot("tree")


def test_the_nodes_show_what_holds_each_gpu(dashboard: Dashboard) -> None:
    dashboard.login("admin")
    [placed] = dashboard.api("GET", "/api/v1/placements").json()
    assert (placed["job"], placed["task"], len(placed["gpus"])) == ("holder", "worker-0", 1)
    dashboard.open("nodes", "[data-node='gpu-b'] .gpu")
    held = f"[data-node='{placed['node']}'] [data-gpu='{placed['gpus'][0]}']"
    assert "holder/worker-0" in dashboard.text(held)
    assert "alice" in dashboard.text(held)
    holders = [e.text for e in dashboard.driver.find_elements(By.CSS_SELECTOR, ".gpu")]
    assert len(holders) == 4 and sum("free" in text for text in holders) == 3
    dashboard.shot("nodes")


def test_the_jobs_list_says_why_a_job_waits(dashboard: Dashboard) -> None:
    dashboard.login("admin")
    reason = dashboard.api("GET", "/api/v1/jobs/waiter").json()["status"]["pendingReason"]
    dashboard.open("jobs", "[data-job='waiter']")
    assert dashboard.text("[data-job='waiter'] .reason") == f"{reason['kind']}: {reason['message']}"
    assert dashboard.text("[data-job='holder'] [data-state]") == "Running"
    dashboard.open("jobs?state=Pending", "[data-job='waiter']")
    assert not dashboard.driver.find_elements(By.CSS_SELECTOR, "[data-job='holder']")
    dashboard.shot("jobs")


def test_a_job_submitted_through_the_api_appears_live_in_the_open_list(
        dashboard: Dashboard) -> None:
    dashboard.login("admin")
    dashboard.open("jobs", "[data-job='holder']")
    # It follows the watch stream (`GET /jobs?watch=true`), not a poll.
    dashboard.wait("the watch", lambda d: d.find_element(By.ID, "jobs-live").text == "live")
    answer = dashboard.api("POST", "/api/v1/jobs", "alice", headers=YAML,
                           content=job_yaml("fresh", replicas=1, gpu=0, cpu="100m",
                                            memory="64Mi", command="[/bin/true]"))
    assert answer.status_code == 201, answer.text
    dashboard.wait("fresh in the list", lambda d: d.find_elements(
        By.CSS_SELECTOR, "[data-job='fresh']") or None)
    dashboard.wait("fresh succeeded", lambda d: d.find_element(
        By.CSS_SELECTOR, "[data-job='fresh'] [data-state]").text == "Succeeded")


def test_the_job_page_follows_the_log(dashboard: Dashboard) -> None:
    dashboard.login("admin")
    dashboard.open("job/holder", "[data-task='worker-0']")
    dashboard.wait("the holder's line", lambda d: HOLDER_LINE in d.find_element(
        By.ID, "log").text)
    assert "Running" in dashboard.text("[data-task='worker-0']")
    events = dashboard.api("GET", "/api/v1/jobs/holder/events").json()["items"]
    dashboard.wait("every event", lambda d: len(d.find_elements(
        By.CSS_SELECTOR, "#job-events tbody tr")) >= len(events))
    assert events[-1]["cause"] in dashboard.text("#job-events")
    dashboard.shot("job")


def test_a_non_admin_sees_no_admin_controls(dashboard: Dashboard) -> None:
    dashboard.login("alice")
    assert not any(link.is_displayed() for link in
                   dashboard.driver.find_elements(By.CSS_SELECTOR, "nav [data-admin]"))
    for route, ready in (("tree", "[data-vc='team-a']"), ("nodes", "[data-node='gpu-a']"),
                         ("job/holder", "[data-task='worker-0']")):
        dashboard.open(route, ready)
        assert not dashboard.driver.find_elements(By.CSS_SELECTOR, "#view [data-admin]"), route
    dashboard.login("admin")
    for route, ready in (("tree", "[data-vc='team-a'] [data-admin]"),
                         ("nodes", "[data-node='gpu-a'] [data-admin]")):
        dashboard.open(route, ready)


def test_a_refused_token_is_asked_for_again(dashboard: Dashboard) -> None:
    dashboard.login("alice")
    dashboard.driver.find_element(By.ID, "logout").click()  # stops the page's requests
    dashboard.who = None
    dashboard.wait("the login form", lambda d: d.find_element(By.ID, "token"))
    dashboard.driver.execute_script("sessionStorage.setItem('shoal.token', 'not-a-token')")
    dashboard.driver.get(f"{dashboard.up.url}/#/jobs")
    dashboard.driver.refresh()
    dashboard.wait("the login form", lambda d: d.find_element(By.ID, "token"))
    assert "refused" in dashboard.text("#login")
    assert not dashboard.driver.find_element(By.ID, "nav").is_displayed()


def test_the_browser_reports_no_script_errors(dashboard: Dashboard) -> None:
    dashboard.login("admin")
    dashboard.open("usage", "h1")
    logs = dashboard.driver.get_log("browser")
    severe = [entry for entry in logs if entry.get("level") == "SEVERE"
              and "/api/v1/" not in entry.get("message", "")]
    assert not severe, severe


def test_an_admin_cordons_a_node_from_its_page(dashboard: Dashboard) -> None:
    dashboard.login("admin")
    dashboard.open("nodes", "[data-node='gpu-b'] [data-action='cordon']")
    dashboard.driver.find_element(By.CSS_SELECTOR,
                                  "[data-node='gpu-b'] [data-action='cordon']").click()
    dashboard.wait("gpu-b cordoned on the page", lambda d: d.find_element(
        By.CSS_SELECTOR, "[data-node='gpu-b'] [data-state]").text == "Cordoned")
    nodes = {n["name"]: n for n in dashboard.api("GET", "/api/v1/nodes").json()}
    assert nodes["gpu-b"]["state"] == "Cordoned" and nodes["gpu-a"]["state"] == "Ready"
    dashboard.shot("cordoned")
    dashboard.driver.find_element(By.CSS_SELECTOR,
                                  "[data-node='gpu-b'] [data-action='uncordon']").click()
    dashboard.wait("gpu-b ready again", lambda d: d.find_element(
        By.CSS_SELECTOR, "[data-node='gpu-b'] [data-state]").text == "Ready")
    audit = dashboard.api("GET", "/api/v1/audit?action=node.cordon").json()["items"]
    assert [(e["action"], e["target"]) for e in audit][:1] == [("node.cordon", "gpu-b")]
    dashboard.open("audit", "[data-audit]")
    assert "node.uncordon" in dashboard.text("#audit")


def test_the_usage_page_reports_what_ran(dashboard: Dashboard) -> None:
    dashboard.login("admin")
    until_day = (datetime.now(UTC) + timedelta(days=1)).date()
    query = (f"by=queue&step=day&since={until_day - timedelta(days=7)}T00:00:00Z"
             f"&until={until_day}T00:00:00Z")

    def default_row() -> dict[str, Any]:
        rows = dashboard.api("GET", f"/api/v1/usage?{query}").json()["rows"]
        return next((r for r in rows if r["key"] == "default"), {"tasks": 0})

    before = default_row()["tasks"]
    answer = dashboard.api("POST", "/api/v1/jobs", "alice", headers=YAML,
                           content=job_yaml("counted", replicas=2, gpu=1, cpu="1",
                                            memory="64Mi", command="[/bin/true]"))
    assert answer.status_code == 201, answer.text
    row = until("both tasks' usage recorded",
                lambda: (r := default_row())["tasks"] == before + 2 and r)
    assert row["gpuSeconds"] > 0
    dashboard.open("usage", "[data-key='default']")
    cells = [c.text for c in dashboard.driver.find_elements(
        By.CSS_SELECTOR, "[data-key='default'] td")]
    assert cells[:2] == ["default", str(row["tasks"])]
    # Hours to two significant digits
    assert float(cells[2]) == pytest.approx(row["gpuSeconds"] / 3600, rel=0.051)
    assert float(cells[3]) == pytest.approx(row["cpuSeconds"] / 3600, rel=0.051)
    assert dashboard.driver.find_elements(By.CSS_SELECTOR, "#usage-bars rect")
    lines = dashboard.driver.find_elements(By.CSS_SELECTOR, "#usage-lines polyline")
    points = dashboard.driver.find_elements(By.CSS_SELECTOR, "#usage-lines circle")
    assert lines and len(points) == 7 * len(lines)  # a point per day of the week shown
    dashboard.shot("usage")


def test_an_admin_revokes_and_reissues_a_users_tokens(dashboard: Dashboard) -> None:
    dashboard.login("admin")
    dashboard.open("users", "[data-user='alice'] [data-admin]")
    buttons = {b.text: b for b in dashboard.driver.find_elements(
        By.CSS_SELECTOR, "[data-user='alice'] button")}
    buttons["Revoke tokens"].click()
    dashboard.wait("the confirmation", lambda d: d.switch_to.alert).accept()
    dashboard.wait("the count", lambda d: "Revoked" in d.find_element(By.ID, "issued").text)
    assert dashboard.api("GET", "/api/v1/users/me", "alice").status_code == 401
    buttons["New token"].click()
    fresh = dashboard.wait("the new token", lambda d: d.find_elements(
        By.CSS_SELECTOR, "#issued code") or None)[0].text
    dashboard.tokens["alice"] = fresh
    assert dashboard.api("GET", "/api/v1/users/me", "alice").json()["name"] == "alice"
