//! The support notes: where they are read, searched for a question, and a policy answered
//! from them.

use backchannel_host::CallContext;
use serde_json::json;

use super::{Desk, capitalised, text_of};

impl Desk {
    /// Where the current (or archived) notes are read: the connection, the prefix of its
    /// filesystem tools, and the folder.
    pub(crate) fn notes_at(
        &self,
        archive: bool,
    ) -> Option<(&'static str, &'static str, std::path::PathBuf)> {
        let knowledge = self.config.knowledge.as_ref()?;
        Some(match (knowledge.through_orders, archive) {
            (false, false) => ("knowledge-base", "", knowledge.current.clone()),
            (false, true) => ("knowledge-base-archive", "", knowledge.archive.clone()),
            (true, false) => ("orders", "knowledge_base_", knowledge.current.clone()),
            (true, true) => (
                "orders",
                "knowledge_base_archive_",
                knowledge.archive.clone(),
            ),
        })
    }

    /// Read every note of the current (or archived) knowledge base.
    pub(crate) async fn read_notes(&self, archive: bool) -> Result<Vec<(String, String)>, String> {
        let Some((name, prefix, dir)) = self.notes_at(archive) else {
            return Err("the knowledge base is not configured".into());
        };
        let host = self.host.host().await?;
        let connection = host
            .connection(name)
            .map_err(|_| "the knowledge base is not available right now".to_owned())?;
        // One filesystem tool of the knowledge server, on one path.
        let on_path = async |tool: &str, path: std::path::PathBuf| {
            let arguments = serde_json::Map::from_iter([("path".to_owned(), json!(path))]);
            let tool = format!("{prefix}{tool}");
            let context = CallContext::new();
            let result = connection.call_tool(&tool, Some(arguments), &context).await;
            result.map_err(|e| e.to_string())
        };
        // The notes' own folder, then each folder of notes the person added (its notes named
        // `folder/note.md`).
        let mut folders = vec![(dir.clone(), String::new())];
        if !archive && prefix.is_empty() {
            folders.extend(
                connection
                    .root_folders()
                    .into_iter()
                    .filter(|path| *path != dir)
                    .map(|path| {
                        let named = path.file_name().map(|n| n.to_string_lossy().into_owned());
                        (path, format!("{}/", named.unwrap_or_default()))
                    }),
            );
        }
        let mut notes = Vec::new();
        for (dir, named) in folders {
            let listing = on_path("list_directory", dir.clone()).await?;
            for line in text_of(&listing).lines() {
                let Some(file) = line.strip_prefix("[FILE] ").filter(|f| f.ends_with(".md")) else {
                    continue;
                };
                let result = on_path("read_text_file", dir.join(file)).await?;
                if result.is_error != Some(true) {
                    notes.push((format!("{named}{file}"), text_of(&result)));
                }
            }
        }
        Ok(notes)
    }

    /// The passages of the notes that answer `question`, for the model: at most three, each
    /// naming its note.
    pub(crate) async fn search_notes(&self, question: &str, archive: bool) -> String {
        let notes = match self.read_notes(archive).await {
            Ok(notes) => notes,
            Err(error) => return format!("error: {error}"),
        };
        let borrowed: Vec<(&str, &str)> = notes
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let found = crate::notes::ranked(&borrowed, question, 3);
        if found.is_empty() {
            return "No passage of the notes answers that; offer to escalate to a team lead."
                .into();
        }
        found
            .iter()
            .map(|(note, passage)| format!("[{note}] {}", passage.markdown()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Answer a policy question from one note: the passage that answers it best (a list item
    /// or paragraph, under its heading), naming the note; the note's opening if none does.
    pub(crate) async fn policy(&self, note: &str, archive: bool, question: &str) -> String {
        let Some((name, prefix, dir)) = self.notes_at(archive) else {
            return "The knowledge base is not configured, so I cannot answer policy questions."
                .into();
        };
        let host = self.host.host().await;
        let Some(connection) = host.as_ref().ok().and_then(|h| h.connection(name).ok()) else {
            return "The knowledge base is not available right now, so I cannot answer policy questions.".into();
        };
        let mut arguments = serde_json::Map::new();
        arguments.insert("path".into(), json!(dir.join(note)));
        let text = match connection
            .call_tool(
                &format!("{prefix}read_text_file"),
                Some(arguments),
                &CallContext::new(),
            )
            .await
        {
            Ok(result) if result.is_error != Some(true) => text_of(&result),
            Ok(result) => return format!("I could not read the notes: {}", text_of(&result)),
            Err(error) => return format!("I could not read the notes: {error}"),
        };
        let source = if archive {
            "the archived notes (rules in force until 31 December 2023)"
        } else {
            "the current notes"
        };
        match crate::notes::best_passage(&text, question) {
            Some(passage) => format!("From {source}, {note}: {}", passage.markdown()),
            None => {
                let opening = crate::notes::passages(&text)
                    .into_iter()
                    .next()
                    .map(|p| p.markdown())
                    .unwrap_or_default();
                format!(
                    "{source} ({note}) do not answer that directly. They begin: {opening}",
                    source = capitalised(source)
                )
            }
        }
    }
}
