import ArgumentParser
import TSyncEngine
import TSyncModel

extension ConflictPolicy: ExpressibleByArgument {}
extension ThreeWayMerge.Side: ExpressibleByArgument {}
extension FailureClass: ExpressibleByArgument {}
extension OperationKind: ExpressibleByArgument {}

/// `--on-conflict`, `--prefer` and `--retries`, shared by push, sync and pull (which pushes first).
struct ConflictOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Settle conflicts within the push: fail (leave them, the default), ours, theirs or merge. Overrides the store's push.onConflict and table.NAME.onConflict.",
            valueName: "POLICY"))
    var onConflict: ConflictPolicy?

    @Option(
        help: ArgumentHelp(
            "With merge: the side that wins a field both sides changed, and a change against a delete (ours or theirs).",
            valueName: "SIDE"))
    var prefer: ThreeWayMerge.Side?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Times to settle and push again when the push of settled operations conflicts again.", valueName: "N"))
    var retries: Int = ConflictPolicies.defaultRetries

    func validate() throws {
        guard retries >= 0 else { throw ValidationError("--retries must be 0 or more (got \(retries))") }
        if prefer != nil, let onConflict, onConflict != .merge {
            throw ValidationError("--prefer applies to --on-conflict merge only")
        }
    }

    /// The policies of each table: these flags over the store's settings. Flags that say
    /// everything leave the settings unread, so a bad setting cannot stop them.
    func policies(_ store: LocalStore) throws(TSyncError) -> ConflictPolicies {
        let settings: PolicySettings
        if let onConflict {
            // The flag names the policy: only a merge without --prefer reads the prefer settings.
            settings =
                onConflict == .merge && prefer == nil ? try store.configuration().policySettings(preferencesOnly: true) : PolicySettings()
        } else {
            settings = try store.configuration().policySettings()
        }
        return ConflictPolicies(settings: settings, onConflict: onConflict, prefer: prefer, retries: retries)
    }
}
