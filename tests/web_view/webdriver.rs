//! A small WebDriver client for the browser tests: starts Debian's `chromedriver` on a free
//! loopback port and drives a headless Chromium through it (W3C WebDriver over HTTP). A
//! missing browser or driver fails the test, naming `.ci/ui-deps.sh`.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

/// The element key of W3C WebDriver.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn find(names: &[&str]) -> PathBuf {
    for name in names {
        for dir in ["/usr/bin", "/usr/lib/chromium", "/usr/local/bin"] {
            let path = PathBuf::from(dir).join(name);
            if path.is_file() {
                return path;
            }
        }
    }
    panic!(
        "none of {names:?} is installed: the browser tests need Debian's `chromium` and \
         `chromium-driver` (run `bash .ci/ui-deps.sh`)"
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

pub struct Browser {
    driver: Child,
    http: reqwest::Client,
    base: String,
    _profile: TempDir,
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session with a fresh profile.
    pub async fn start() -> Browser {
        let chromium = find(&["chromium", "chromium-browser"]);
        let chromedriver = find(&["chromedriver"]);
        let port = free_port();
        // Its own process group, so the browser it starts is killed with it.
        let driver = Command::new(&chromedriver)
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", chromedriver.display()));
        let profile =
            std::env::temp_dir().join(format!("fuseraft-chromium-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).unwrap();
        let mut browser = Browser {
            driver,
            http: reqwest::Client::new(),
            base: format!("http://127.0.0.1:{port}"),
            _profile: TempDir(profile.clone()),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = browser
                .http
                .get(format!("{}/status", browser.base))
                .send()
                .await;
            if let Ok(response) = ready {
                let status: Json = response.json().await.unwrap_or_default();
                if status["value"]["ready"] == json!(true) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,860",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        }}});
        let session = browser.call("POST", "/session", capabilities).await;
        let id = session["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {session}"))
            .to_string();
        browser.base = format!("{}/session/{id}", browser.base);
        browser
    }

    async fn call(&self, method: &str, path: &str, body: Json) -> Json {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => self.http.get(&url),
            "DELETE" => self.http.delete(&url),
            _ => self.http.post(&url).json(&body),
        };
        let response = request
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .unwrap_or_else(|error| panic!("WebDriver {method} {path}: {error}"));
        let value: Json = response.json().await.expect("WebDriver answers JSON");
        if value["value"]["error"].is_string() {
            panic!("WebDriver {method} {path}: {}", value["value"]);
        }
        value
    }

    pub async fn goto(&self, url: &str) {
        self.call("POST", "/url", json!({"url": url})).await;
    }

    /// Resizes the browser's window (the viewport follows).
    pub async fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/window/rect",
            json!({"width": width, "height": height}),
        )
        .await;
    }

    pub async fn refresh(&self) {
        self.call("POST", "/refresh", json!({})).await;
    }

    /// Runs `script` (a function body) in the page and returns what it returns.
    pub async fn run(&self, script: &str) -> Json {
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await["value"]
            .take()
    }

    /// Waits until `script` returns something truthy (not null, false, 0 or "").
    pub async fn wait_for(&self, what: &str, script: &str) -> Json {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let value = self.run(script).await;
            let truthy = !matches!(&value, Json::Null | Json::Bool(false))
                && value != json!(0)
                && value != json!("");
            if truthy {
                return value;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The WebDriver id of the first element matching the CSS `selector`.
    async fn element(&self, selector: &str) -> String {
        let found = self
            .call(
                "POST",
                "/element",
                json!({"using": "css selector", "value": selector}),
            )
            .await;
        found["value"][ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element `{selector}`: {found}"))
            .to_string()
    }

    /// Clicks the first element matching the CSS `selector`, as a user would.
    pub async fn click(&self, selector: &str) {
        let id = self.element(selector).await;
        self.call("POST", &format!("/element/{id}/click"), json!({}))
            .await;
    }

    /// A PNG of the viewport.
    pub async fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let value = self.call("GET", "/screenshot", Json::Null).await;
        base64::engine::general_purpose::STANDARD
            .decode(value["value"].as_str().expect("a base64 screenshot"))
            .expect("valid base64")
    }

    /// Types `text` into the first element matching the CSS `selector`, as a user would.
    pub async fn type_into(&self, selector: &str, text: &str) {
        let id = self.element(selector).await;
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            json!({ "text": text }),
        )
        .await;
    }

    /// Saves a PNG of the viewport as `name`: in `FUSERAFT_SCREENSHOTS` when set
    /// (`FUSERAFT_SCREENSHOTS=docs/images` refreshes the documentation's), else in a
    /// temporary directory.
    pub async fn save_screenshot(&self, name: &str) {
        let png = self.screenshot().await;
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        let dir = std::env::var_os("FUSERAFT_SCREENSHOTS")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("fuseraft-screenshots-{}", std::process::id()))
            });
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), png).unwrap();
    }

    pub async fn close(self) {
        let _ = self.call("DELETE", "", Json::Null).await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(group) = rustix::process::Pid::from_raw(self.driver.id() as i32) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
