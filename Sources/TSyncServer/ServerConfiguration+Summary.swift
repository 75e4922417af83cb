extension ServerConfiguration {
    /// What the server runs with, one line each, for the start-up log: an operator reading it
    /// knows the auth mode, per-user tables, indexes and limits without the command line.
    public var summary: [String] {
        var lines: [String] = []
        if requiresAuthentication {
            lines.append("auth: accounts required (tokens live \(authentication.tokenLifetime.components.seconds) s)")
        } else {
            lines.append("auth: none (--no-auth): anyone who reaches \(host) may read and change every table")
        }
        lines.append("per-user tables: " + (perUserTables.isEmpty ? "none" : perUserTables.sorted().joined(separator: ", ")))
        if !access.tables.isEmpty { lines.append("access rules: " + rules.summary.joined(separator: "; ")) }
        lines.append("indexes: " + (indexes.isEmpty ? "none" : indexes.map(\.description).joined(separator: ", ")))
        if !schemas.isEmpty { lines.append("schemas: " + schemas.keys.sorted().joined(separator: ", ")) }
        lines.append(
            "limits: max-top \(maximumPageSize), max-batch \(maximumBatchOperations), max-connections \(maximumConnections), "
                + "header-timeout \(headerTimeoutSeconds) s, body-timeout \(bodyTimeoutSeconds) s, idle-timeout \(idleTimeoutSeconds) s, "
                + "query-timeout \(queryTimeoutSeconds) s, body \(maximumBodyBytes) bytes")
        lines.append(
            "database shares: db-share \(readsPerClient) reads at once per account or client address, max-tables "
                + (maximumTablesPerAccount > 0 ? "\(maximumTablesPerAccount) per account" : "none"))
        if !trustedProxies.isEmpty { lines.append("trusted proxies: " + trustedProxies.sorted().joined(separator: ", ")) }
        if exposesMetrics { lines.append("metrics: GET /metrics") }
        lines.append(
            "history: "
                + (retention.keepsHistory
                    ? "every version kept \(Self.spoken(retention.history)), GET /tables/$history" : "none (--keep-history 0)")
                + "; deleted records: "
                + (retention.deleted > .zero ? "removed after \(Self.spoken(retention.deleted))" : "kept forever")
                + " (pruned every \(Self.spoken(retention.pruningInterval)))")
        return lines
    }

    /// A duration as the flags write it: whole days, hours, minutes or seconds.
    static func spoken(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where seconds >= size && seconds % size == 0 {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }
}
