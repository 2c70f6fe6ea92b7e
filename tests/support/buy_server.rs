//! The example `buy` plugin server (`plugins/buy/server.py`, real HTTP on loopback) and a
//! plugins folder pointing at it, for the tests of the example and of exactly-once calls.

// Not every includer uses the whole API.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// `plugins/buy/server.py` on a free port, writing its orders to `orders`; killed on drop.
pub struct BuyServer {
    child: Child,
    pub url: String,
    pub orders: PathBuf,
}

impl BuyServer {
    pub fn start(orders: &Path) -> BuyServer {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/plugins/buy/server.py");
        let mut child = Command::new("python3")
            .args([script, "--port", "0", "--orders"])
            .arg(orders)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the example buy plugin");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .rsplit(' ')
            .next()
            .expect("the server prints its url")
            .to_string();
        BuyServer {
            child,
            url,
            orders: orders.to_path_buf(),
        }
    }

    /// `folder/plugins/buy` with the shipped manifest pointing at this server and
    /// `config` as its `config.yml`; the plugins folder.
    pub fn plugins_folder(&self, folder: &Path, config: &str) -> PathBuf {
        let plugins = folder.join("plugins");
        let buy = plugins.join("buy");
        std::fs::create_dir_all(&buy).unwrap();
        let manifest = include_str!("../../plugins/buy/plugin.yaml")
            .replace("http://127.0.0.1:9100/run", &self.url);
        std::fs::write(buy.join("plugin.yaml"), manifest).unwrap();
        std::fs::write(buy.join("config.yml"), config).unwrap();
        plugins
    }

    /// The orders placed so far, one JSON object each.
    pub fn orders(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.orders)
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

impl Drop for BuyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
