/// The bound on the strings a filter makes PostgreSQL build (docs/DESIGN.md §6.3, §10.1).
///
/// SQLite refuses to build a string longer than `SQLiteStorage.maximumValueBytes`; PostgreSQL
/// builds them up to 1 GB, and a filter of nested `replace` took it from 1 GB to 5.8 GB before
/// its deadline. Of the functions a filter may call, only `concat` and `replace` make a string
/// longer than their arguments, so the renderer calls these two instead (`SQLSchema.boundsStrings`):
/// each works out the length of its result before building it and raises `program_limit_exceeded`
/// (SQLSTATE 54000, answered 400 as a filter that cannot be evaluated) past the bound, as SQLite
/// does. Every string a filter builds is then at most the bound, however the calls nest.
enum StringBound {
    /// SQLite's limit, so that both backends refuse the same filters.
    static let maximumBytes = SQLiteStorage.maximumValueBytes

    static var functionDefinitions: [String] {
        let refuse = """
            RAISE EXCEPTION 'a string the filter builds would pass % bytes', \(maximumBytes) USING ERRCODE = 'program_limit_exceeded'
            """
        return [
            """
            CREATE OR REPLACE FUNCTION tsync_concat(a text, b text) RETURNS text
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
            BEGIN
                IF octet_length(a)::bigint + octet_length(b) > \(maximumBytes) THEN
                    \(refuse);
                END IF;
                RETURN a || b;
            END
            $$
            """,
            // A result's length is the text's, plus the growth of each occurrence; the
            // occurrences are counted (with a replace by nothing, which builds no more than the
            // text) only when the most there could be would pass the bound.
            """
            CREATE OR REPLACE FUNCTION tsync_replace(s text, f text, r text) RETURNS text
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
            DECLARE
                grows bigint := octet_length(r)::bigint - octet_length(f);
            BEGIN
                IF grows > 0 AND f <> ''
                    AND octet_length(s) + octet_length(s)::bigint / octet_length(f) * grows > \(maximumBytes)
                    AND octet_length(s) + (octet_length(s)::bigint - octet_length(replace(s, f, ''))) / octet_length(f) * grows
                        > \(maximumBytes)
                THEN
                    \(refuse);
                END IF;
                RETURN replace(s, f, r);
            END
            $$
            """,
        ]
    }
}
