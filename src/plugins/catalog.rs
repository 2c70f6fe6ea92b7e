//! The plugins hearth knows: every `plugins/<id>/plugin.yaml` read at start-up, plus the
//! external plugins that register themselves at runtime through the HTTP API (and, at the
//! next start, `restore_registered` from where they were stored). Cheap to clone and share
//! between actors (an `Arc` around a lock); reads take a short read lock.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::manifest::{MANIFEST_FILE_NAME, ManifestError, PluginManifest, load_manifest_file};
use super::manifest_document::ProblemList;
use super::plugin_config::{
    PLUGIN_CONFIG_FILE_NAME, PluginConfig, PluginConfigError, parse_plugin_config_yaml,
    read_plugin_config,
};
use crate::config::HearthConfig;
use crate::config::yaml_file::PluginFileProblem;
use crate::ports::RegisteredPlugins;

/// Where a plugin in the catalog comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginOrigin {
    /// Read from `plugin.yaml` in this folder at start-up.
    Folder(PathBuf),
    /// Registered at runtime through the registration API.
    Registered,
}

/// One plugin of the catalog.
#[derive(Debug, Clone)]
pub struct CatalogEntry {
    pub manifest: Arc<PluginManifest>,
    pub origin: PluginOrigin,
}

/// What `register` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    Added,
    /// A registered plugin with the same id was replaced (the plugin restarted, say).
    Replaced,
}

/// Why the plugins folder cannot be loaded: every problem of every plugin, together.
#[derive(Debug, thiserror::Error)]
#[error("{}", PluginLoadErrorLines(errors))]
pub struct CatalogError {
    pub errors: Vec<PluginLoadError>,
}

/// One problem found while loading the plugins folder.
#[derive(Debug, thiserror::Error)]
pub enum PluginLoadError {
    #[error("{}: cannot list the plugins folder: {source}", folder.display())]
    ReadFolder {
        folder: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{}: a plugin manifest must be named {MANIFEST_FILE_NAME}; rename the file",
        file.display()
    )]
    MisnamedManifest { file: PathBuf },
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Config(#[from] PluginConfigError),
}

struct PluginLoadErrorLines<'a>(&'a [PluginLoadError]);

impl fmt::Display for PluginLoadErrorLines<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, error) in self.0.iter().enumerate() {
            if position > 0 {
                formatter.write_str("\n")?;
            }
            write!(formatter, "{error}")?;
        }
        Ok(())
    }
}

/// Why a plugin cannot be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error(
        "plugin id {id:?} belongs to the plugin in {}; a registered plugin cannot replace it, register under another id",
        folder.display()
    )]
    TakenByFolderPlugin { id: String, folder: PathBuf },
    #[error("the plugin manifest {id:?} is invalid: {}", ProblemList(problems))]
    Invalid {
        id: String,
        problems: Vec<PluginFileProblem>,
    },
    #[error(
        "plugin {id:?} is not registered: {MAX_REGISTERED_PLUGINS} plugins are registered \
         already, the most hearth keeps; replace one (register under its id) instead"
    )]
    TooMany { id: String },
}

/// The most external plugins registered over the HTTP API (replacing one is always allowed).
pub const MAX_REGISTERED_PLUGINS: usize = 64;

/// Why a plugin's config could not be read for a call.
#[derive(Debug, thiserror::Error)]
pub enum ConfigLookupError {
    #[error("no plugin {id:?} in the catalog")]
    UnknownPlugin { id: String },
    #[error(transparent)]
    Config(#[from] PluginConfigError),
}

/// The plugins hearth can route to. Clones share one catalog, so a plugin registered through
/// the HTTP API is seen at once by every actor holding a clone.
#[derive(Clone)]
pub struct PluginCatalog {
    shared: Arc<CatalogShared>,
}

struct CatalogShared {
    plugins_dir: PathBuf,
    plugins: RwLock<BTreeMap<String, CatalogEntry>>,
    /// Each `config.yml` as last read, with the file's modification time and length then:
    /// read again only when those change, so calls do not re-read an unchanged file.
    configs: Mutex<HashMap<PathBuf, CachedConfig>>,
}

/// A `config.yml` as read: `None` stamp for a missing file (no presets).
struct CachedConfig {
    stamp: Option<(Option<std::time::SystemTime>, u64)>,
    /// The manifest it was checked against: a re-registered plugin checks it again.
    manifest: Arc<PluginManifest>,
    config: PluginConfig,
}

impl fmt::Debug for PluginCatalog {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("PluginCatalog")
            .field("plugins_dir", &self.shared.plugins_dir)
            .field("plugin_ids", &self.plugin_ids())
            .finish()
    }
}

impl PluginCatalog {
    /// A catalog with no plugins; registered plugins keep their `config.yml` under
    /// `plugins_dir/<id>/` all the same.
    pub fn empty(plugins_dir: impl Into<PathBuf>) -> Self {
        Self::with_plugins(plugins_dir.into(), BTreeMap::new())
    }

    /// Loads the folder named by the `plugins_dir` config key.
    pub fn from_config(config: &HearthConfig) -> Result<Self, CatalogError> {
        Self::load(&config.plugins_dir)
    }

    /// `from_config` on a blocking thread, for async code: loading reads files.
    pub async fn from_config_off_the_runtime(config: &HearthConfig) -> Result<Self, CatalogError> {
        let plugins_dir = config.plugins_dir.clone();
        tokio::task::spawn_blocking(move || Self::load(plugins_dir))
            .await
            .unwrap_or_else(|error| {
                Err(CatalogError {
                    errors: vec![PluginLoadError::ReadFolder {
                        folder: PathBuf::from(&config.plugins_dir),
                        source: std::io::Error::other(format!("loading stopped: {error}")),
                    }],
                })
            })
    }

    /// Loads every `<plugins_dir>/<id>/plugin.yaml`, and checks each plugin's `config.yml`
    /// so that a broken preset stops start-up instead of the first call. A folder without a
    /// manifest is skipped: it may hold the config of a plugin that registers itself. No
    /// `plugins_dir` at all is no plugins.
    pub fn load(plugins_dir: impl Into<PathBuf>) -> Result<Self, CatalogError> {
        let plugins_dir = plugins_dir.into();
        let mut errors = Vec::new();
        let mut plugins = BTreeMap::new();
        for folder in plugin_folders(&plugins_dir, &mut errors) {
            let manifest_file = folder.join(MANIFEST_FILE_NAME);
            if !manifest_file.is_file() {
                let misnamed = ["plugin.yml", "plugin.json"]
                    .map(|name| folder.join(name))
                    .into_iter()
                    .find(|file| file.is_file());
                if let Some(file) = misnamed {
                    errors.push(PluginLoadError::MisnamedManifest { file });
                }
                continue;
            }
            let manifest = match load_manifest_file(&manifest_file) {
                Ok(manifest) => manifest,
                Err(error) => {
                    errors.push(error.into());
                    continue;
                }
            };
            if let Err(error) = read_plugin_config(&folder, &manifest) {
                errors.push(error.into());
            }
            plugins.insert(
                manifest.id.clone(),
                CatalogEntry {
                    manifest: Arc::new(manifest),
                    origin: PluginOrigin::Folder(folder),
                },
            );
        }
        if errors.is_empty() {
            Ok(Self::with_plugins(plugins_dir, plugins))
        } else {
            Err(CatalogError { errors })
        }
    }

    fn with_plugins(plugins_dir: PathBuf, plugins: BTreeMap<String, CatalogEntry>) -> Self {
        Self {
            shared: Arc::new(CatalogShared {
                plugins_dir,
                plugins: RwLock::new(plugins),
                configs: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn plugins_dir(&self) -> &Path {
        &self.shared.plugins_dir
    }

    /// Adds an external plugin, or replaces the registered one with the same id. A plugin
    /// from the plugins folder is never replaced: its manifest is the operator's, and an
    /// HTTP caller must not be able to redirect its calls.
    pub fn register(&self, manifest: PluginManifest) -> Result<Registration, RegisterError> {
        manifest
            .check()
            .map_err(|problems| RegisterError::Invalid {
                id: manifest.id.clone(),
                problems,
            })?;
        let mut plugins = self
            .shared
            .plugins
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(CatalogEntry {
            origin: PluginOrigin::Folder(folder),
            ..
        }) = plugins.get(&manifest.id)
        {
            return Err(RegisterError::TakenByFolderPlugin {
                id: manifest.id.clone(),
                folder: folder.clone(),
            });
        }
        let registered = plugins
            .values()
            .filter(|entry| matches!(entry.origin, PluginOrigin::Registered))
            .count();
        if !plugins.contains_key(&manifest.id) && registered >= MAX_REGISTERED_PLUGINS {
            return Err(RegisterError::TooMany {
                id: manifest.id.clone(),
            });
        }
        let previous = plugins.insert(
            manifest.id.clone(),
            CatalogEntry {
                manifest: Arc::new(manifest),
                origin: PluginOrigin::Registered,
            },
        );
        Ok(match previous {
            Some(_) => Registration::Replaced,
            None => Registration::Added,
        })
    }

    pub fn get(&self, plugin_id: &str) -> Option<CatalogEntry> {
        self.read_plugins().get(plugin_id).cloned()
    }

    pub fn manifest(&self, plugin_id: &str) -> Option<Arc<PluginManifest>> {
        self.get(plugin_id).map(|entry| entry.manifest)
    }

    /// Every plugin, by id.
    pub fn list(&self) -> Vec<CatalogEntry> {
        self.read_plugins().values().cloned().collect()
    }

    pub fn plugin_ids(&self) -> Vec<String> {
        self.read_plugins().keys().cloned().collect()
    }

    /// The capability ids of a plugin, `None` when there is no such plugin.
    pub fn capability_ids(&self, plugin_id: &str) -> Option<Vec<String>> {
        self.manifest(plugin_id).map(|manifest| {
            manifest
                .capabilities
                .iter()
                .map(|capability| capability.id.clone())
                .collect()
        })
    }

    /// Refuses start-up when `confirm_tools` names a plugin or capability that does not
    /// exist (an approval that names nothing protects nothing).
    pub fn check_approval_names(
        &self,
        loaded: &crate::config::LoadedConfig,
    ) -> Result<(), crate::config::ConfigError> {
        loaded.check_plugin_approval_names(|id| self.capability_ids(id), &self.plugin_ids())
    }

    /// The folder holding a plugin's `config.yml`: its own folder, or `plugins_dir/<id>` for
    /// a registered plugin (whose defaults never travel through registration).
    pub fn config_folder(&self, plugin_id: &str) -> Option<PathBuf> {
        self.get(plugin_id)
            .map(|entry| self.config_folder_of(plugin_id, &entry))
    }

    fn config_folder_of(&self, plugin_id: &str, entry: &CatalogEntry) -> PathBuf {
        match &entry.origin {
            PluginOrigin::Folder(folder) => folder.clone(),
            PluginOrigin::Registered => self.shared.plugins_dir.join(plugin_id),
        }
    }

    /// The plugin's `config.yml` as it is now, for one call: edits apply without a restart.
    /// Read with async I/O, and only again when the file's modification time or length
    /// changed since the last read.
    pub async fn read_config(&self, plugin_id: &str) -> Result<PluginConfig, ConfigLookupError> {
        let entry = self
            .get(plugin_id)
            .ok_or_else(|| ConfigLookupError::UnknownPlugin {
                id: plugin_id.to_owned(),
            })?;
        let file = self
            .config_folder_of(plugin_id, &entry)
            .join(PLUGIN_CONFIG_FILE_NAME);
        let stamp = match tokio::fs::metadata(&file).await {
            Ok(metadata) => Some((metadata.modified().ok(), metadata.len())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(PluginConfigError::Read { file, source }.into()),
        };
        if let Some(cached) = self.configs().get(&file)
            && cached.stamp == stamp
            && Arc::ptr_eq(&cached.manifest, &entry.manifest)
        {
            return Ok(cached.config.clone());
        }
        let config = match stamp {
            None => PluginConfig::default(),
            Some(_) => {
                let text = tokio::fs::read_to_string(&file).await.map_err(|source| {
                    PluginConfigError::Read {
                        file: file.clone(),
                        source,
                    }
                })?;
                parse_plugin_config_yaml(&text, &file, &entry.manifest)?
            }
        };
        self.configs().insert(
            file,
            CachedConfig {
                stamp,
                manifest: entry.manifest.clone(),
                config: config.clone(),
            },
        );
        Ok(config)
    }

    fn configs(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, CachedConfig>> {
        self.shared
            .configs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn read_plugins(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, CatalogEntry>> {
        // A panic while holding the lock cannot leave the map half-written (each write is one
        // insert), so a poisoned lock is still a consistent catalog.
        self.shared
            .plugins
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Put the external plugins registered in earlier runs back into `catalog`.
pub async fn restore_registered(catalog: &PluginCatalog, registered: &dyn RegisteredPlugins) {
    match registered.list().await {
        Ok(registered) => {
            for plugin in registered {
                let restored = PluginManifest::from_json_value(plugin.manifest)
                    .map_err(|error| error.to_string())
                    .and_then(|manifest| {
                        catalog
                            .register(manifest)
                            .map_err(|error| error.to_string())
                    });
                if let Err(error) = restored {
                    tracing::warn!(plugin = %plugin.plugin_id, %error, "registered plugin not restored");
                }
            }
        }
        Err(error) => {
            tracing::error!(%error, "registered plugins unreadable; they must register again")
        }
    }
}

/// The plugin folders inside `plugins_dir`, sorted so that problems come in a stable order.
fn plugin_folders(plugins_dir: &Path, errors: &mut Vec<PluginLoadError>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(plugins_dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(source) => {
            errors.push(PluginLoadError::ReadFolder {
                folder: plugins_dir.to_path_buf(),
                source,
            });
            return Vec::new();
        }
    };
    let mut folders = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) if entry.path().is_dir() => folders.push(entry.path()),
            Ok(_) => {}
            Err(source) => errors.push(PluginLoadError::ReadFolder {
                folder: plugins_dir.to_path_buf(),
                source,
            }),
        }
    }
    folders.sort();
    folders
}
