import TSyncEngine
import TSyncModel

/// Field changes as `diff` shows them: a "-" line with the value before, a "+" line with the value
/// after (`history -p` shows each version's changes the same way).
enum FieldChangeText {
    static func lines(_ changes: [FieldChange], style: Style) -> String {
        var text = ""
        for change in changes {
            if let before = change.before { text += style.red("- \(change.field): \(JSONSerializer.string(before))") + "\n" }
            if let after = change.after { text += style.green("+ \(change.field): \(JSONSerializer.string(after))") + "\n" }
        }
        if changes.isEmpty { text += style.dim("  (no field changes)") + "\n" }
        return text
    }
}
