//! A real headless Chromium driven over WebDriver, for the web tests: pages must work in a real
//! browser (forms, redirects, cookies, the phone and desktop layouts), not in a fake.
//!
//! `scripts/install-test-browser.sh` installs Debian's `chromium` and `chromium-driver`. Each
//! `Browser` owns its own `chromedriver --port=<free loopback port>` child process (killed, with
//! the Chromium it started, on drop; its output kept for error messages), a WebDriver session
//! (a `fantoccini` client over plain HTTP) and a temporary folder removed on drop, holding a
//! fresh Chromium profile and the `TMPDIR` of chromedriver and Chromium, so tests running in
//! parallel never share cookies or storage. With `HEARTH_REQUIRE_REAL_SERVERS=1` a missing
//! install fails the test, otherwise the test skips. Screenshots go to
//! `$CARGO_TARGET_DIR/screenshots` (default `target/screenshots`), one PNG per name and width,
//! for a person to look at.

// Not every includer uses the whole API.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use fantoccini::elements::Element;
use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::real_llm::require_real_servers;

pub use fantoccini::cookies::Cookie;

/// How long chromedriver may take to answer `/status` as ready (milliseconds when idle).
const DRIVER_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long opening the WebDriver session (starting Chromium) may take: under a second when
/// idle, much more while the whole suite compiles and runs beside it on 2 cores.
const SESSION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `wait_for` (and so `fill`, `click`, `text_of`) waits for an element to appear.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the drop waits for chromedriver to end the session (it closes Chromium).
const QUIT_TIMEOUT: Duration = Duration::from_secs(10);
/// Fresh ports tried when the probed one is taken before chromedriver binds it.
const START_ATTEMPTS: usize = 3;
/// The most of chromedriver's output quoted in an error.
const LOG_TAIL_CHARS: usize = 6000;

/// Chromium's switches: headless; no sandbox (it refuses to start as root, and containers
/// often lack the namespaces it needs); no GPU; shared memory in /tmp rather than a small
/// /dev/shm; no first-run or background noise; scrollbars hidden and a scale factor of 1 so
/// screenshots are the viewport's size.
const CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--lang=en-US",
];

/// The viewport a page is shown in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// 390x844 CSS pixels, a current phone held upright.
    Phone,
    /// 1280x900 CSS pixels, a laptop's browser window.
    Desktop,
}

impl Width {
    /// The viewport's width and height in CSS pixels.
    pub fn size(self) -> (u32, u32) {
        match self {
            Width::Phone => (390, 844),
            Width::Desktop => (1280, 900),
        }
    }

    /// `phone` or `desktop`: the end of a screenshot's file name.
    pub fn name(self) -> &'static str {
        match self {
            Width::Phone => "phone",
            Width::Desktop => "desktop",
        }
    }
}

/// One headless Chromium with its own chromedriver and profile.
pub struct Browser {
    test: String,
    client: Client,
    /// The WebDriver session, ended by the drop unless `close` ended it.
    session: Option<String>,
    width: Width,
    // Dropped in this order: chromedriver's process group is killed before its folder goes.
    driver: Driver,
    /// `profile/`, Chromium's `--user-data-dir`, and `tmp/`, the `TMPDIR` of chromedriver and
    /// Chromium (their scratch folders and, with `--disable-dev-shm-usage`, shared memory).
    folder: tempfile::TempDir,
}

/// A running chromedriver, leader of its own process group; the drop kills the group
/// (chromedriver and any Chromium it started).
struct Driver {
    child: Child,
    port: u16,
    /// Everything it printed on stdout and stderr.
    log: Arc<Mutex<String>>,
}

impl Browser {
    /// `chromedriver` and `chromium` on PATH, as the install script leaves them.
    pub fn is_installed() -> bool {
        find_on_path("chromedriver").is_some() && find_on_path("chromium").is_some()
    }

    /// Start a fresh browser for `test`, or decide the test is skipped (`None`, after a note on
    /// stderr) because Chromium or chromedriver is not installed. Panics when they are
    /// installed but do not start, and when they are missing while
    /// `HEARTH_REQUIRE_REAL_SERVERS=1`.
    pub async fn start_or_skip(test: &str) -> Option<Browser> {
        if !Self::is_installed() {
            if require_real_servers() {
                panic!(
                    "{test}: Chromium is not installed (chromium or chromedriver is not on PATH) \
                     and HEARTH_REQUIRE_REAL_SERVERS=1; run scripts/install-test-browser.sh"
                );
            }
            eprintln!(
                "SKIPPED {test}: Chromium is not installed (chromium or chromedriver is not on \
                 PATH); run scripts/install-test-browser.sh to enable this test, or set \
                 HEARTH_REQUIRE_REAL_SERVERS=1 to make its absence an error"
            );
            return None;
        }
        match Self::start(test).await {
            Ok(browser) => Some(browser),
            Err(err) => panic!("{test}: {err:#}"),
        }
    }

    /// A fresh browser: its own chromedriver on a new loopback port, a new profile, the
    /// desktop width, a blank page.
    pub async fn start(test: &str) -> Result<Browser> {
        let driver_path = find_on_path("chromedriver").ok_or_else(|| {
            anyhow!("chromedriver is not on PATH; run scripts/install-test-browser.sh")
        })?;
        let chromium_path = find_on_path("chromium").ok_or_else(|| {
            anyhow!("chromium is not on PATH; run scripts/install-test-browser.sh")
        })?;
        let folder = tempfile::Builder::new()
            .prefix(&format!("hearth-browser-{}-", folder_safe(test)))
            .tempdir()
            .context("cannot create a folder for Chromium")?;
        let (profile, tmp) = (folder.path().join("profile"), folder.path().join("tmp"));
        for dir in [&profile, &tmp] {
            std::fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }

        let driver = Driver::start(&driver_path, &tmp).await?;
        let client = open_session(test, &driver, &chromium_path, &profile).await?;
        let session = client
            .session_id()
            .await
            .context("the WebDriver session has no id")?;
        let mut browser = Browser {
            test: test.to_owned(),
            client,
            session,
            width: Width::Desktop,
            driver,
            folder,
        };
        browser.set_width(Width::Desktop).await?;
        Ok(browser)
    }

    /// The raw WebDriver client, for anything this module does not wrap.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// chromedriver's base URL (`http://127.0.0.1:<port>`).
    pub fn driver_url(&self) -> String {
        self.driver.url()
    }

    /// Everything chromedriver printed so far.
    pub fn driver_log(&self) -> String {
        lock(&self.driver.log).clone()
    }

    /// Chromium's profile folder (removed when the browser drops).
    pub fn profile_dir(&self) -> PathBuf {
        self.folder.path().join("profile")
    }

    /// Load `url` and wait for its load event.
    pub async fn goto(&self, url: &str) -> Result<()> {
        self.client
            .goto(url)
            .await
            .with_context(|| format!("{}: cannot open {url}", self.test))
    }

    /// The address of the page shown now (after any redirects).
    pub async fn current_url(&self) -> Result<String> {
        Ok(self
            .client
            .current_url()
            .await
            .with_context(|| format!("{}: cannot read the current URL", self.test))?
            .to_string())
    }

    /// The width pages are shown at now.
    pub fn width(&self) -> Width {
        self.width
    }

    /// Show pages at `width`: the viewport (what CSS media queries see) becomes exactly
    /// `width.size()`. Headless Chromium's window has a frame (139 px of height in Chromium
    /// 148), so the window is sized by what the viewport measures.
    pub async fn set_width(&mut self, width: Width) -> Result<()> {
        let (want_w, want_h) = width.size();
        for _ in 0..3 {
            let (inner_w, inner_h) = self.viewport().await?;
            if (inner_w, inner_h) == (want_w, want_h) {
                self.width = width;
                return Ok(());
            }
            let (window_w, window_h) = self
                .client
                .get_window_size()
                .await
                .with_context(|| format!("{}: cannot read the window's size", self.test))?;
            let resize = |window: u64, want: u32, inner: u32| {
                u32::try_from(window + u64::from(want))
                    .unwrap_or(u32::MAX)
                    .saturating_sub(inner)
                    .max(1)
            };
            self.client
                .set_window_size(
                    resize(window_w, want_w, inner_w),
                    resize(window_h, want_h, inner_h),
                )
                .await
                .with_context(|| {
                    format!(
                        "{}: cannot resize the window to {}",
                        self.test,
                        width.name()
                    )
                })?;
        }
        let (inner_w, inner_h) = self.viewport().await?;
        if (inner_w, inner_h) == (want_w, want_h) {
            self.width = width;
            return Ok(());
        }
        bail!(
            "{}: the viewport is {inner_w}x{inner_h}, not the {want_w}x{want_h} of {}",
            self.test,
            width.name()
        )
    }

    /// The viewport's width and height in CSS pixels.
    pub async fn viewport(&self) -> Result<(u32, u32)> {
        let size = self
            .client
            .execute("return [window.innerWidth, window.innerHeight];", vec![])
            .await
            .with_context(|| format!("{}: cannot read the viewport's size", self.test))?;
        let number = |i: usize| {
            size.get(i)
                .and_then(|value| value.as_u64())
                .map(|n| n as u32)
        };
        match (number(0), number(1)) {
            (Some(w), Some(h)) => Ok((w, h)),
            _ => bail!(
                "{}: the viewport's size is not two numbers: {size}",
                self.test
            ),
        }
    }

    /// Save what the viewport shows as `<target>/screenshots/<name>-<width>.png` (the folder is
    /// made if missing) and return its path.
    pub async fn screenshot(&self, name: &str) -> Result<PathBuf> {
        let png = self
            .client
            .screenshot()
            .await
            .with_context(|| format!("{}: cannot take the screenshot {name}", self.test))?;
        let folder = screenshot_dir();
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
        let path = folder.join(format!("{name}-{}.png", self.width.name()));
        std::fs::write(&path, png).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }

    /// The first element matching `css`, waiting up to `WAIT_TIMEOUT` for it to appear.
    pub async fn wait_for(&self, css: &str) -> Result<Element> {
        self.wait_for_within(css, WAIT_TIMEOUT).await
    }

    /// The first element matching `css`, waiting up to `timeout` for it to appear.
    pub async fn wait_for_within(&self, css: &str, timeout: Duration) -> Result<Element> {
        match self
            .client
            .wait()
            .at_most(timeout)
            .every(Duration::from_millis(50))
            .for_element(Locator::Css(css))
            .await
        {
            Ok(element) => Ok(element),
            Err(err) => {
                let url = self.current_url().await.unwrap_or_else(|_| "?".into());
                Err(anyhow!(err).context(format!(
                    "{}: no element matches `{css}` on {url} within {timeout:?}",
                    self.test
                )))
            }
        }
    }

    /// Replace the value of the field matching `css` by `text`, as typed keys.
    pub async fn fill(&self, css: &str, text: &str) -> Result<()> {
        let field = self.wait_for(css).await?;
        field
            .clear()
            .await
            .with_context(|| format!("{}: cannot clear `{css}`", self.test))?;
        field
            .send_keys(text)
            .await
            .with_context(|| format!("{}: cannot type {text:?} into `{css}`", self.test))
    }

    /// Click the element matching `css` (a submit button submits its form; chromedriver waits
    /// for the navigation that starts).
    pub async fn click(&self, css: &str) -> Result<()> {
        let element = self.wait_for(css).await?;
        element
            .click()
            .await
            .with_context(|| format!("{}: cannot click `{css}`", self.test))
    }

    /// The visible text of the element matching `css`.
    pub async fn text_of(&self, css: &str) -> Result<String> {
        let element = self.wait_for(css).await?;
        element
            .text()
            .await
            .with_context(|| format!("{}: cannot read the text of `{css}`", self.test))
    }

    /// The cookies the current page's site has (HttpOnly ones included).
    pub async fn cookies(&self) -> Result<Vec<Cookie<'static>>> {
        self.client
            .get_all_cookies()
            .await
            .with_context(|| format!("{}: cannot read the cookies", self.test))
    }

    /// The cookie `name` of the current page's site, if it has one.
    pub async fn cookie(&self, name: &str) -> Result<Option<Cookie<'static>>> {
        Ok(self
            .cookies()
            .await?
            .into_iter()
            .find(|cookie| cookie.name() == name))
    }

    /// Forget the cookie `name` of the current page's site.
    pub async fn delete_cookie(&self, name: &str) -> Result<()> {
        self.client
            .delete_cookie(name)
            .await
            .with_context(|| format!("{}: cannot delete the cookie {name}", self.test))
    }

    /// End the session (Chromium quits) and chromedriver; dropping does the same, blocking.
    pub async fn close(mut self) -> Result<()> {
        if self.session.take().is_some() {
            self.client
                .clone()
                .close()
                .await
                .with_context(|| format!("{}: cannot end the WebDriver session", self.test))?;
        }
        Ok(())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // chromedriver quits Chromium when its session ends; killed, it would leave Chromium
        // running. The request blocks briefly: the async client cannot run inside a drop.
        if let Some(session) = self.session.take() {
            let _ = delete_session(self.driver.port, &session);
        }
        // Then `driver` drops: its process group is killed.
    }
}

/// Open a WebDriver session: chromedriver starts a headless Chromium on `profile`.
async fn open_session(
    test: &str,
    driver: &Driver,
    chromium: &Path,
    profile: &Path,
) -> Result<Client> {
    let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|arg| arg.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    let (width, height) = Width::Desktop.size();
    args.push(format!("--window-size={width},{height}"));
    let mut capabilities = Capabilities::new();
    capabilities.insert("browserName".into(), json!("chrome"));
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({ "binary": chromium, "args": args }),
    );
    // Plain HTTP: chromedriver listens on loopback only, so no TLS backend is built.
    let mut builder = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
    builder.capabilities(capabilities);
    let url = driver.url();
    match tokio::time::timeout(SESSION_TIMEOUT, builder.connect(&url)).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(err)) => bail!(
            "{test}: chromedriver could not start Chromium ({}): {err}\nchromedriver said:\n{}",
            chromium.display(),
            driver.log_tail()
        ),
        Err(_) => bail!(
            "{test}: Chromium did not start within {SESSION_TIMEOUT:?}\nchromedriver said:\n{}",
            driver.log_tail()
        ),
    }
}

impl Driver {
    /// chromedriver on a fresh loopback port, answering `/status` as ready; it and the
    /// Chromium it starts keep their scratch files in `tmp`.
    async fn start(program: &Path, tmp: &Path) -> Result<Driver> {
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            let port = reserve_port()?;
            let log = Arc::new(Mutex::new(String::new()));
            let child = match spawn_driver(program, port, tmp, &log) {
                Ok(child) => child,
                Err(err) => {
                    release_port(port);
                    return Err(err);
                }
            };
            let mut driver = Driver { child, port, log };
            match driver.wait_ready().await {
                Ok(()) => return Ok(driver),
                Err(err) => {
                    let log = driver.log_tail();
                    drop(driver);
                    if !(log.contains("Address already in use") || log.contains("bind() failed")) {
                        return Err(err);
                    }
                    // Another process bound the port between the probe and chromedriver.
                    last_error = Some(err);
                }
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow!("chromedriver did not start")))
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log_tail(&self) -> String {
        tail(&lock(&self.log))
    }

    /// Poll `GET /status` until chromedriver says it is ready.
    async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + DRIVER_READY_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().context("cannot check chromedriver")? {
                // Let the reader threads take the last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                bail!(
                    "chromedriver exited ({status}) before it was ready on port {}; it said:\n{}",
                    self.port,
                    self.log_tail()
                );
            }
            let last = match status_answer(self.port).await {
                Ok(answer) if answer.contains("\"ready\":true") => return Ok(()),
                Ok(answer) => answer,
                Err(err) => format!("{err:#}"),
            };
            if Instant::now() >= deadline {
                bail!(
                    "chromedriver was not ready on port {} within {DRIVER_READY_TIMEOUT:?} \
                     (last /status: {last}); it said:\n{}",
                    self.port,
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // SIGKILL the whole process group: chromedriver and whatever Chromium processes are
        // left (killed alone, chromedriver leaves Chromium running).
        if let Ok(group) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) with a negative pid signals that process group: the one
            // chromedriver leads, made by `process_group(0)` at spawn; the group id cannot be
            // reused before the `wait` below reaps chromedriver.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        release_port(self.port);
    }
}

/// Start chromedriver on `port`, its own process group leader (so the drop can end the
/// Chromium it starts too), its stdout and stderr collected in `log`. Chromium inherits its
/// `TMPDIR`, so the `org.chromium.Chromium.*` folders it leaves go with the browser's folder.
fn spawn_driver(driver: &Path, port: u16, tmp: &Path, log: &Arc<Mutex<String>>) -> Result<Child> {
    let mut child = Command::new(driver)
        .arg(format!("--port={port}"))
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot run {}", driver.display()))?;
    if let Some(out) = child.stdout.take() {
        collect(out, log.clone());
    }
    if let Some(err) = child.stderr.take() {
        collect(err, log.clone());
    }
    Ok(child)
}

fn collect(mut pipe: impl Read + Send + 'static, log: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(read) = pipe.read(&mut buffer) {
            if read == 0 {
                break;
            }
            lock(&log).push_str(&String::from_utf8_lossy(&buffer[..read]));
        }
    });
}

/// The whole HTTP answer of chromedriver's `/status`.
async fn status_answer(port: u16) -> Result<String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        stream
            .write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await?;
        // chromedriver keeps the connection open whatever `Connection: close` says: read
        // until the answer is whole.
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        while !answer_is_whole(&answer) {
            let read = stream.read(&mut buffer).await?;
            if read == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..read]);
        }
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&answer).into_owned())
    };
    Ok(tokio::time::timeout(Duration::from_secs(2), exchange)
        .await
        .context("/status did not answer within 2s")??)
}

/// `DELETE /session/<id>`, blocking until chromedriver answered (Chromium has quit).
fn delete_session(port: u16, session: &str) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(QUIT_TIMEOUT))?;
    stream.set_write_timeout(Some(QUIT_TIMEOUT))?;
    write!(
        stream,
        "DELETE /session/{session} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    while !answer_is_whole(&answer) {
        let read = stream.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..read]);
    }
    Ok(())
}

/// True once `answer` holds an HTTP response's head and the `Content-Length` bytes of body
/// (chromedriver always sends one).
fn answer_is_whole(answer: &[u8]) -> bool {
    let Some(end) = answer.windows(4).position(|window| window == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&answer[..end]);
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    answer.len() >= end + 4 + length
}

/// Where screenshots go: `$CARGO_TARGET_DIR/screenshots`, else `target/screenshots` of the
/// crate.
pub fn screenshot_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => manifest.join(dir),
        _ => manifest.join("target"),
    };
    target.join("screenshots")
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

fn folder_safe(test: &str) -> String {
    test.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect()
}

fn tail(log: &str) -> String {
    let skip = log.chars().count().saturating_sub(LOG_TAIL_CHARS);
    log.chars().skip(skip).collect()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Ports handed to chromedrivers of this process and not yet released.
static TAKEN_PORTS: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A free loopback port below the kernel's ephemeral range (chromedriver's connections to
/// Chromium and every client's take ephemeral ports, so one probed there could be taken
/// before chromedriver binds it).
fn reserve_port() -> Result<u16> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let mut taken = lock(&TAKEN_PORTS);
    if ephemeral_low > 12000 {
        for _ in 0..200 {
            let port = fastrand::u16(10000..ephemeral_low);
            if !taken.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
                taken.insert(port);
                return Ok(port);
            }
        }
    }
    // An unusual kernel setting: let the OS pick one.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .context("no free loopback port")?
        .port();
    taken.insert(port);
    Ok(port)
}

fn release_port(port: u16) {
    lock(&TAKEN_PORTS).remove(&port);
}
