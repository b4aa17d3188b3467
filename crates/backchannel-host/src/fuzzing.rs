//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`; not an API). Each takes
//! arbitrary bytes and panics only when an invariant breaks.

/// Read bytes as the host's TOML configuration.
pub fn host_config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(config) = crate::config::HostConfig::from_toml(text)
    {
        for name in config.connections.keys() {
            assert!(!name.is_empty());
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_config_corpus_replays() {
        backchannel::testing::replay_fuzz_corpus("host_config", super::host_config);
    }
}
