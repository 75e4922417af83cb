function __tsync_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __tsync_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __tsync_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __tsync_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __tsync_parse_tokens -S
    set -l unparsed_tokens (__tsync_tokens -pc)
    switch $unparsed_tokens[1]
    case 'tsync'
        __tsync_parse_subcommand 0 'C/store=' 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'init'
            __tsync_parse_subcommand 1 'remote=' 'h/help'
        case 'remote'
            __tsync_parse_subcommand 1 'C/store=' 'json' 'h/help'
        case 'insert'
            __tsync_parse_subcommand 2 'C/store=' 'q/quiet' 'csv' 'h/help'
        case 'update'
            __tsync_parse_subcommand 3 'C/store=' 'set=+' 'filter=' 'dry-run' 'v/verbose' 'json' 'h/help'
        case 'upsert'
            __tsync_parse_subcommand 2 'C/store=' 'csv' 'q/quiet' 'v/verbose' 'json' 'h/help'
        case 'delete'
            __tsync_parse_subcommand -r 2 'C/store=' 'filter=' 'dry-run' 'v/verbose' 'json' 'h/help'
        case 'get'
            __tsync_parse_subcommand 2 'C/store=' 'json' 'h/help'
        case 'query'
            __tsync_parse_subcommand 1 'C/store=' 'json' 'filter=' 'orderby=' 'top=' 'skip=' 'select=' 'csv' 'h/help'
        case 'tables'
            __tsync_parse_subcommand 0 'C/store=' 'json' 'h/help'
        case 'status'
            __tsync_parse_subcommand 0 'C/store=' 's/short' 'porcelain' 'json' 'ndjson' 'exit-code' 'h/help'
        case 'diff'
            __tsync_parse_subcommand 2 'C/store=' 'json' 'ndjson' 'no-pager' 'h/help'
        case 'purge'
            __tsync_parse_subcommand 1 'C/store=' 'filter=' 'force' 'forget-queries' 'y/yes' 'dry-run' 'h/help'
        case 'login'
            __tsync_parse_subcommand 0 'C/store=' 'v/verbose' 'user=' 'password-stdin' 'h/help'
        case 'logout'
            __tsync_parse_subcommand 0 'C/store=' 'v/verbose' 'h/help'
        case 'whoami'
            __tsync_parse_subcommand 0 'C/store=' 'v/verbose' 'h/help'
        case 'push'
            __tsync_parse_subcommand 0 'C/store=' 'table=+' 'dry-run' 'atomic' 'check' 'on-conflict=' 'prefer=' 'retries=' 'json' 'q/quiet' 'v/verbose' 'h/help'
        case 'pull'
            __tsync_parse_subcommand 1 'C/store=' 'filter=' 'query-id=' 'page-size=' 'reset' 'on-conflict=' 'prefer=' 'retries=' 'json' 'q/quiet' 'v/verbose' 'h/help'
        case 'sync'
            __tsync_parse_subcommand 0 'C/store=' 'on-conflict=' 'prefer=' 'retries=' 'json' 'q/quiet' 'v/verbose' 'h/help'
        case 'watch'
            __tsync_parse_subcommand 0 'C/store=' 'table=+' 'json' 'exec=' 'timeout=' 'interval=' 'on-conflict=' 'prefer=' 'retries=' 'v/verbose' 'h/help'
        case 'queries'
            __tsync_parse_subcommand 0 'C/store=' 'json' 'h/help'
        case 'conflicts'
            __tsync_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __tsync_parse_subcommand 0 'C/store=' 'table=' 'json' 'ndjson' 'no-pager' 'h/help'
            case 'show'
                __tsync_parse_subcommand 1 'C/store=' 'json' 'h/help'
            end
        case 'resolve'
            __tsync_parse_subcommand -r 1 'C/store=' 'all' 'table=' 'ours' 'theirs' 'cancel' 'discard' 'merge' 'class=+' 'kind=+' 'prefer=' 'push' 'dry-run' 'json' 'q/quiet' 'v/verbose' 'h/help'
        case 'config'
            __tsync_parse_subcommand -r 2 'C/store=' 'unset' 'list' 'json' 'h/help'
        case 'log'
            __tsync_parse_subcommand 0 'C/store=' 'n=' 'json' 'no-pager' 'h/help'
        case 'serve'
            __tsync_parse_subcommand 0 'db=' 'host=' 'port=' 'no-auth' 'insecure' 'per-user=+' 'index=+' 'max-top=' 'max-batch=' 'max-connections=' 'max-watchers=' 'header-timeout=' 'idle-timeout=' 'body-timeout=' 'query-timeout=' 'trusted-proxy=+' 'tls-cert=' 'tls-key=' 'token-ttl=' 'log-format=' 'metrics' 'keep-history=' 'keep-deleted=' 'config=' 'h/help'
        case 'user'
            __tsync_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'add'
                __tsync_parse_subcommand 1 'password-stdin' 'db=' 'h/help'
            case 'remove'
                __tsync_parse_subcommand 1 'y/yes' 'dry-run' 'db=' 'h/help'
            case 'list'
                __tsync_parse_subcommand 0 'db=' 'h/help'
            case 'passwd'
                __tsync_parse_subcommand 1 'password-stdin' 'db=' 'h/help'
            case 'token'
                __tsync_parse_subcommand 1 'ttl=' 'db=' 'h/help'
            end
        case 'version'
            __tsync_parse_subcommand 0 'h/help'
        case 'help'
            __tsync_parse_subcommand -r 1 
        end
    end
end

function __tsync_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __tsync_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __tsync_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __tsync_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__tsync_tokens -p)
    if test -z "$(__tsync_tokens -t)"
        set -l index (count (__tsync_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'tsync' -f
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'init' -d 'Create a tsync store in DIR/.tsync/.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'remote' -d 'Show or set the server URL.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'insert' -d 'Insert records into a local table and queue them for push.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'update' -d 'Change fields of a local record and queue an update.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'upsert' -d 'Insert new records and merge fields into existing ones; queue nothing that would not change.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'delete' -d 'Delete local records and queue deletes.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'get' -d 'Print one local record.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'query' -d 'Read records of a local table, with OData options.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'tables' -d 'List local tables with record, pending and error counts.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'status' -d 'Show pending operations, errors, saved queries and the remote.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'diff' -d 'Show what each pending change does, field by field, against its base.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'purge' -d 'Drop local records of a table (the server is not touched).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'login' -d 'Get a token from the server and save it in the store.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'logout' -d 'Revoke the saved token on the server and remove it from the store.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'whoami' -d 'Print the account the current credentials reach on the remote.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'push' -d 'Send pending operations to the server, in queue order.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'pull' -d 'Fetch a table from the server into the store.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'sync' -d 'Push, then pull every saved query id.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'watch' -d 'Keep the store current both ways: pull changes as they are committed, push what is queued.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'queries' -d 'List saved pull query ids with their checkpoints.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'conflicts' -d 'List failed operations (the error table) with base / ours / theirs.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'resolve' -d 'Settle failed operations without prompting.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'config' -d 'Get and set the store\'s settings.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'log' -d 'Show what the commands that changed the store or talked to the server did.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'serve' -d 'Run the sync server (Mobile Apps v2 table protocol).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'user' -d 'Manage the accounts of a server database.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'version' -d 'Print the version of tsync.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync init" remote' -l 'remote' -d 'The server to push to and pull from.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync init" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync remote" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync remote" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync remote" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync insert" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync insert" -eq 1' -fka '(__tsync_custom_completion ---completion insert -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync insert" q quiet' -l 'quiet' -s 'q' -d 'Do not print the ids.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync insert" csv' -l 'csv' -d 'Read CSV from stdin (a header row of field names; types as described above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync insert" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync update" -eq 1' -fka '(__tsync_custom_completion ---completion update -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update"' -l 'set' -d 'Set one field (repeatable).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update" filter' -l 'filter' -d 'Update every record this OData expression is true for (instead of an ID).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update" dry-run' -l 'dry-run' -d 'With --filter: print what would be updated; change nothing.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update" v verbose' -l 'verbose' -s 'v' -d 'With --filter: print each updated record as TABLE/ID.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync upsert" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync upsert" -eq 1' -fka '(__tsync_custom_completion ---completion upsert -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync upsert" csv' -l 'csv' -d 'Read CSV from stdin (a header row of field names; types as `tsync insert --help` says).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync upsert" q quiet' -l 'quiet' -s 'q' -d 'Print nothing on stderr.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync upsert" v verbose' -l 'verbose' -s 'v' -d 'Print what happened to each record on stdout.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync upsert" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync upsert" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync delete" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync delete" -eq 1' -fka '(__tsync_custom_completion ---completion delete -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync delete" filter' -l 'filter' -d 'Delete every record this OData expression is true for (instead of ids).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync delete" dry-run' -l 'dry-run' -d 'Check the ids and print what would be deleted; change nothing.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync delete" v verbose' -l 'verbose' -s 'v' -d 'With --filter: print each deleted record as TABLE/ID.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync delete" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync delete" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync get" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync get" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync get" -eq 1' -fka '(__tsync_custom_completion ---completion get -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync get" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync query" -eq 1' -fka '(__tsync_custom_completion ---completion query -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" filter' -l 'filter' -d 'Keep the records this OData expression is true for.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" orderby' -l 'orderby' -d 'Sort keys: "FIELD [asc|desc], ...".' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" top' -l 'top' -d 'Print at most N records.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" skip' -l 'skip' -d 'Skip the first N records.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" select' -l 'select' -d 'Print only these fields: "FIELD,...".' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" csv' -l 'csv' -d 'Print CSV: a header row, then one row per record.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync tables" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync tables" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync tables" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" s short' -l 'short' -s 's' -d 'One line per table with pending work.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" porcelain' -l 'porcelain' -d 'One line per pending operation, stable for scripts.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" ndjson' -l 'ndjson' -d 'Print one JSON object per line (NDJSON, the same objects).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" exit-code' -l 'exit-code' -d 'Exit 1 when anything is pending.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync diff" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync diff" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync diff" ndjson' -l 'ndjson' -d 'Print one JSON object per line (NDJSON, the same objects).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync diff" no-pager' -l 'no-pager' -d 'Never page the output (otherwise a text longer than the terminal goes through the pager).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync diff" -eq 1' -fka '(__tsync_custom_completion ---completion diff -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync diff" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync purge" -eq 1' -fka '(__tsync_custom_completion ---completion purge -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" filter' -l 'filter' -d 'Only records this OData expression is true for.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" force' -l 'force' -d 'Also drop the table\'s pending operations.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" forget-queries' -l 'forget-queries' -d 'With --filter: also forget the table\'s saved queries, so the next pull fetches everything again.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" y yes' -l 'yes' -s 'y' -d 'Do not ask for confirmation (needed when stdin is not a terminal).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" dry-run' -l 'dry-run' -d 'Say what would be dropped; change nothing.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync login" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync login" v verbose' -l 'verbose' -s 'v' -d 'Show each HTTP request and its answer on stderr (never a token).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync login" user' -l 'user' -d 'The account name.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync login" password-stdin' -l 'password-stdin' -d 'Read the password from the first line of stdin.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync login" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync logout" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync logout" v verbose' -l 'verbose' -s 'v' -d 'Show each HTTP request and its answer on stderr (never a token).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync logout" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync whoami" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync whoami" v verbose' -l 'verbose' -s 'v' -d 'Show each HTTP request and its answer on stderr (never a token).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync whoami" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push"' -l 'table' -d 'Push only this table (repeatable).' -rfka '(__tsync_custom_completion ---completion push -- --table (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" dry-run' -l 'dry-run' -d 'List what would be sent; send nothing.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" atomic' -l 'atomic' -d 'Apply the whole queue all or nothing (needs tsync serve).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" check' -l 'check' -d 'Predict, item by item, what a push would do (asks the server, writes nothing).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" on-conflict' -l 'on-conflict' -d 'Settle conflicts within the push: fail (leave them, the default), ours, theirs or merge. Overrides the store\'s push.onConflict and table.NAME.onConflict.' -rfka 'fail ours theirs merge'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" prefer' -l 'prefer' -d 'With merge: the side that wins a field both sides changed, and a change against a delete (ours or theirs).' -rfka 'ours theirs'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" retries' -l 'retries' -d 'Times to settle and push again when the push of settled operations conflicts again.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" json' -l 'json' -d 'Print the result as JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" q quiet' -l 'quiet' -s 'q' -d 'No progress and no summary on stderr (exit codes still tell).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" v verbose' -l 'verbose' -s 'v' -d 'Show each HTTP request and its answer on stderr (never a token).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync push" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync pull" -eq 1' -fka '(__tsync_custom_completion ---completion pull -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" filter' -l 'filter' -d 'Only records this OData $filter is true for.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" query-id' -l 'query-id' -d 'Save the pull under this id and pull incrementally.' -rfka '(__tsync_custom_completion ---completion pull -- --query-id (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" page-size' -l 'page-size' -d 'Records per request (the server may cap it).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" reset' -l 'reset' -d 'Forget the query id\'s checkpoint and pull everything again.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" on-conflict' -l 'on-conflict' -d 'Settle conflicts within the push: fail (leave them, the default), ours, theirs or merge. Overrides the store\'s push.onConflict and table.NAME.onConflict.' -rfka 'fail ours theirs merge'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" prefer' -l 'prefer' -d 'With merge: the side that wins a field both sides changed, and a change against a delete (ours or theirs).' -rfka 'ours theirs'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" retries' -l 'retries' -d 'Times to settle and push again when the push of settled operations conflicts again.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" json' -l 'json' -d 'Print the result as JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" q quiet' -l 'quiet' -s 'q' -d 'No progress and no summary on stderr (exit codes still tell).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" v verbose' -l 'verbose' -s 'v' -d 'Show each HTTP request and its answer on stderr (never a token).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync pull" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync sync" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync sync" on-conflict' -l 'on-conflict' -d 'Settle conflicts within the push: fail (leave them, the default), ours, theirs or merge. Overrides the store\'s push.onConflict and table.NAME.onConflict.' -rfka 'fail ours theirs merge'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync sync" prefer' -l 'prefer' -d 'With merge: the side that wins a field both sides changed, and a change against a delete (ours or theirs).' -rfka 'ours theirs'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync sync" retries' -l 'retries' -d 'Times to settle and push again when the push of settled operations conflicts again.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync sync" json' -l 'json' -d 'Print the result as JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync sync" q quiet' -l 'quiet' -s 'q' -d 'No progress and no summary on stderr (exit codes still tell).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync sync" v verbose' -l 'verbose' -s 'v' -d 'Show each HTTP request and its answer on stderr (never a token).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync sync" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch"' -l 'table' -d 'Watch only this table\'s saved queries (repeatable).' -rfka '(__tsync_custom_completion ---completion watch -- --table (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" json' -l 'json' -d 'Print one JSON object per event (fields listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" exec' -l 'exec' -d 'Run `sh -c CMD` after each batch of changes, with its events on stdin.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" timeout' -l 'timeout' -d 'End after this many seconds (exit 0).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" interval' -l 'interval' -d 'Seconds between reads of a server without the live route.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" on-conflict' -l 'on-conflict' -d 'Settle conflicts within the push: fail (leave them, the default), ours, theirs or merge. Overrides the store\'s push.onConflict and table.NAME.onConflict.' -rfka 'fail ours theirs merge'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" prefer' -l 'prefer' -d 'With merge: the side that wins a field both sides changed, and a change against a delete (ours or theirs).' -rfka 'ours theirs'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" retries' -l 'retries' -d 'Times to settle and push again when the push of settled operations conflicts again.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" v verbose' -l 'verbose' -s 'v' -d 'Show each HTTP request and its answer on stderr (never a token).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync queries" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync queries" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync queries" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync conflicts" -eq 1' -fa 'list' -d 'List every error (the default).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync conflicts" -eq 1' -fa 'show' -d 'Show one error with base / ours / theirs field by field.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts list" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts list" table' -l 'table' -d 'Only errors of this table.' -rfka '(__tsync_custom_completion ---completion conflicts list -- --table (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts list" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts list" ndjson' -l 'ndjson' -d 'Print one JSON object per line (NDJSON, the same objects).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts list" no-pager' -l 'no-pager' -d 'Never page the output (otherwise a text longer than the terminal goes through the pager).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts show" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync conflicts show" -eq 1' -fka '(__tsync_custom_completion ---completion conflicts show -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts show" json' -l 'json' -d 'Print machine-readable JSON (one object, as in the list).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync conflicts show" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync resolve" -ge 1' -fka '(__tsync_custom_completion ---completion resolve -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" all' -l 'all' -d 'Settle every error.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" table' -l 'table' -d 'Settle every error of this table.' -rfka '(__tsync_custom_completion ---completion resolve -- --table (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" ours' -l 'ours' -d 'Client wins: keep the operation, push it again.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" theirs' -l 'theirs' -d 'Server wins: drop the operation, take the server\'s copy.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" cancel' -l 'cancel' -d 'Clear the error; the operation stays pending.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" discard' -l 'discard' -d 'Drop the local change; back to the base.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" merge' -l 'merge' -d 'Three-way merge by field; refused on a field both sides changed.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve"' -l 'class' -d 'Only errors of this class (repeatable).' -rfka 'version-conflict already-exists missing rejected server-error'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve"' -l 'kind' -d 'Only errors of this operation kind (repeatable).' -rfka 'insert update delete'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" prefer' -l 'prefer' -d 'With --merge: the side that wins a field both sides changed.' -rfka 'ours theirs'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" push' -l 'push' -d 'Push right after settling (useful with --ours and --merge).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" dry-run' -l 'dry-run' -d 'Print what each error would become; change nothing.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" json' -l 'json' -d 'Print the result as JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" q quiet' -l 'quiet' -s 'q' -d 'No progress and no summary on stderr (exit codes still tell).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" v verbose' -l 'verbose' -s 'v' -d 'Show each HTTP request and its answer on stderr (never a token).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync resolve" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync config" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync config" -eq 1' -fka '(__tsync_custom_completion ---completion config -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync config" unset' -l 'unset' -d 'Remove the key.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync config" list' -l 'list' -d 'List every setting.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync config" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync config" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync log" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfa '(__tsync_complete_directories)'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync log" n' -s 'n' -d 'Show the newest N entries.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync log" json' -l 'json' -d 'Print machine-readable JSON (stable field names, listed above).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync log" no-pager' -l 'no-pager' -d 'Never page the output (otherwise a text longer than the terminal goes through the pager).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync log" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" db' -l 'db' -d 'Server database: sqlite:PATH or postgres://USER@HOST[:PORT]/DB.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" host' -l 'host' -d 'Address to listen on.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" port' -l 'port' -d 'Port to listen on; 0 picks a free one.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" no-auth' -l 'no-auth' -d 'Serve without accounts (only on a loopback address unless --insecure).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" insecure' -l 'insecure' -d 'Allow --no-auth on an address other than loopback.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve"' -l 'per-user' -d 'A table whose records only the user who inserted them sees (repeatable).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve"' -l 'index' -d 'Keep an index on a user field of a table, TABLE.FIELD (repeatable).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" max-top' -l 'max-top' -d 'Largest page ($top) a client may ask for.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" max-batch' -l 'max-batch' -d 'Most operations one POST /tables/$batch may hold; 0 turns the batch route off.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" max-connections' -l 'max-connections' -d 'Connections open at once; one more is answered 503 and closed.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" max-watchers' -l 'max-watchers' -d 'Requests the live route may hold at once; 0 turns it off.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" header-timeout' -l 'header-timeout' -d 'How long a request\'s head may take to arrive, from its first byte.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" idle-timeout' -l 'idle-timeout' -d 'How long a connection may stay open with no request under way.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" body-timeout' -l 'body-timeout' -d 'How long a request\'s body may take to arrive, from its head; past it the answer is 408.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" query-timeout' -l 'query-timeout' -d 'How long a read may spend in the database; past it the query is stopped and the answer is 503.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve"' -l 'trusted-proxy' -d 'Address of a reverse proxy whose X-Forwarded-* headers are believed (repeatable).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" tls-cert' -l 'tls-cert' -d 'Serve HTTPS with this PEM certificate (chain: the server\'s first, then intermediates).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" tls-key' -l 'tls-key' -d 'The PEM private key of --tls-cert.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" token-ttl' -l 'token-ttl' -d 'Lifetime of a login token.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" log-format' -l 'log-format' -d 'How log lines are written on stderr: text or json.' -rfka 'text json'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" metrics' -l 'metrics' -d 'Count requests, records and failures and answer GET /metrics (Prometheus text format).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" keep-history' -l 'keep-history' -d 'How long every version of every record is kept; 0 keeps none and turns GET /tables/$history off.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" keep-deleted' -l 'keep-deleted' -d 'How long deleted records are kept before they are removed; 0 keeps them forever.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" config' -l 'config' -d 'Read settings from a TOML file whose keys are the long flag names; flags given here win.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync serve" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync user" -eq 1' -fa 'add' -d 'Create an account.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync user" -eq 1' -fa 'remove' -d 'Remove an account and revoke its tokens (its records stay).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync user" -eq 1' -fa 'list' -d 'List the accounts, one name per line.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync user" -eq 1' -fa 'passwd' -d 'Change an account\'s password and revoke its tokens.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync user" -eq 1' -fa 'token' -d 'Mint a token for an account, for a CI secret store (printed once).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user add" password-stdin' -l 'password-stdin' -d 'Read the password from stdin (one line).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user add" db' -l 'db' -d 'Server database: sqlite:PATH or postgres://USER@HOST[:PORT]/DB.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user add" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user remove" y yes' -l 'yes' -s 'y' -d 'Do not ask.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user remove" dry-run' -l 'dry-run' -d 'Say what would be removed; change nothing.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user remove" db' -l 'db' -d 'Server database: sqlite:PATH or postgres://USER@HOST[:PORT]/DB.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user remove" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user list" db' -l 'db' -d 'Server database: sqlite:PATH or postgres://USER@HOST[:PORT]/DB.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user passwd" password-stdin' -l 'password-stdin' -d 'Read the password from stdin (one line).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user passwd" db' -l 'db' -d 'Server database: sqlite:PATH or postgres://USER@HOST[:PORT]/DB.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user passwd" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user token" ttl' -l 'ttl' -d 'How long the token lives: a number and s, m, h or d, e.g. 90m, 12h, 30d (at most 366d).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user token" db' -l 'db' -d 'Server database: sqlite:PATH or postgres://USER@HOST[:PORT]/DB.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync user token" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync version" h help' -s 'h' -l 'help' -d 'Show help information.'complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync help" -ge 1' -fka '(__tsync_custom_completion ---completion help -- positional@0 (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'

