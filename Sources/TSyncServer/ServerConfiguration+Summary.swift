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
        lines.append("indexes: " + (indexes.isEmpty ? "none" : indexes.map(\.description).joined(separator: ", ")))
        lines.append(
            "limits: max-top \(maximumPageSize), max-batch \(maximumBatchOperations), max-connections \(maximumConnections), "
                + "header-timeout \(headerTimeoutSeconds) s, body-timeout \(bodyTimeoutSeconds) s, idle-timeout \(idleTimeoutSeconds) s, "
                + "query-timeout \(queryTimeoutSeconds) s, body \(maximumBodyBytes) bytes")
        if !trustedProxies.isEmpty { lines.append("trusted proxies: " + trustedProxies.sorted().joined(separator: ", ")) }
        if exposesMetrics { lines.append("metrics: GET /metrics") }
        return lines
    }
}
