"""Writes the README's screenshots of the dashboard to docs/screenshots/*.png (1280x800).

Starts a real `shoal up` (local executor, fake GPUs) in a temporary directory with a small
cluster — two nodes of four GPUs, virtual clusters `research` and `prod` — submits a few
jobs (one waits for GPUs), opens each page in headless Chromium (Debian's `chromium` and
`chromedriver`: `make browser`) and saves it. Every job is cancelled and its tasks stopped
before the server is. Run as root from the repository: `.venv/bin/python
examples/dashboard/screenshots.py`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from shoal.executors.local import free_port

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
WAIT_S = 90

CLUSTER = """\
apiVersion: shoal/v1
kind: Node
metadata: {name: gpu-NAME, labels: {gpu-type: a100}}
spec: {capacity: {cpu: 16, memory: 64Gi, gpu: 4}}
"""
TEAMS = """\
apiVersion: shoal/v1
kind: VirtualCluster
metadata: {name: research}
spec: {flexibleResourceMin: {gpu: 4}, flexibleResourceMax: {gpu: 6}}
---
apiVersion: shoal/v1
kind: VirtualCluster
metadata: {name: prod}
spec: {flexibleResourceMin: {gpu: 2}}
"""
TRAIN = (r"""i=0; while true; do i=$((i+1)); echo "step $i loss $((1000 / (i + 3)))e-3"; """
         "sleep 1; done")


def job(name: str, queue: str, replicas: int, gpus: int) -> str:
    return f"""\
apiVersion: shoal/v1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: {queue}
  taskGroups:
    - name: worker
      replicas: {replicas}
      resources: {{cpu: {2 * gpus or 1}, memory: 8Gi, gpu: {gpus}}}
      command: [/bin/sh, -c, '{TRAIN}']
"""


RUNNING = [("llama-finetune", "research", 3, 1), ("resnet-sweep", "research", 1, 2),
           ("bert-serve", "prod", 1, 1)]
WAITING = ("big-pretrain", "default", 4, 2)
"""Eight GPUs: it waits until the others end."""


def submit(url: str, auth: dict[str, str], text: str) -> None:
    answer = httpx.post(f"{url}/api/v1/jobs", content=text,
                        headers={**auth, "Content-Type": "application/yaml"})
    answer.raise_for_status()


def wait(what: str, check: object) -> None:
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="shoal-shots-"))
    home.chmod(0o711)  # tasks run as their own OS users under its work directory
    (home / "cluster.yaml").write_text(CLUSTER.replace("NAME", "a") + "---\n"
                                       + CLUSTER.replace("NAME", "b") + "---\n" + TEAMS)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "shoal"), "up", "--port", str(port),
         "--cluster", "cluster.yaml", "--interval", "0.2", "--work-dir", str(home / "work")],
        cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    token_file = home / ".shoal" / "admin.token"
    driver = None
    try:
        wait("shoal up", lambda: token_file.exists() and httpx.get(f"{url}/healthz").is_success)
        auth = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
        for name, queue, replicas, gpus in RUNNING:
            submit(url, auth, job(name, queue, replicas, gpus))
        wait("three jobs running", lambda: len(httpx.get(
            f"{url}/api/v1/jobs?state=Running", headers=auth).json()["items"]) == 3)
        submit(url, auth, job("data-prep", "prod", 2, 1).replace(TRAIN, "sleep 5"))
        wait("data-prep's usage", lambda: httpx.get(
            f"{url}/api/v1/jobs/data-prep", headers=auth).json()["status"]["state"]
             == "Succeeded")
        submit(url, auth, job(*WAITING))
        wait("a log", lambda: "step 3" in httpx.get(
            f"{url}/api/v1/jobs/llama-finetune/logs", headers=auth).text)
        driver = browser()
        driver.get(f"{url}/#/tree")
        field = WebDriverWait(driver, WAIT_S).until(lambda d: d.find_element(By.ID, "token"))
        field.send_keys(token_file.read_text().strip())
        driver.find_element(By.CSS_SELECTOR, "#login button[type=submit]").click()
        OUT.mkdir(parents=True, exist_ok=True)
        for route, ready, name in (("tree", "[data-vc='prod']", "tree"),
                                   ("nodes", "[data-node='gpu-b'] .gpu", "nodes"),
                                   ("jobs", "[data-job='big-pretrain'] .reason", "jobs"),
                                   ("job/llama-finetune", "[data-task='worker-2']", "job"),
                                   ("usage", "h1", "usage")):
            driver.get(f"{url}/#/{route}")
            WebDriverWait(driver, WAIT_S).until(
                lambda d, ready=ready: d.find_elements(By.CSS_SELECTOR, ready))
            if name == "job":
                WebDriverWait(driver, WAIT_S).until(
                    lambda d: "step 3" in d.find_element(By.ID, "log").text)
            driver.save_screenshot(str(OUT / f"{name}.png"))
            print(OUT / f"{name}.png")
    finally:
        if driver is not None:
            driver.quit()
        if token_file.exists():  # tasks outlive their server: stop them first
            auth = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
            for name, *_ in (*RUNNING, WAITING):
                httpx.post(f"{url}/api/v1/jobs/{name}/cancel", headers=auth)
            wait("every task stopped", lambda: httpx.get(
                f"{url}/api/v1/placements", headers=auth).json() == [])
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)


def browser() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1280,800", "--hide-scrollbars"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


if __name__ == "__main__":
    if os.geteuid() != 0:
        raise SystemExit("run as root: tasks run as their own OS users")
    main()
