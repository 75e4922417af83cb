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
            __tsync_parse_subcommand 1 'remote=' 'version' 'h/help'
        case 'remote'
            __tsync_parse_subcommand 1 'C/store=' 'json' 'version' 'h/help'
        case 'insert'
            __tsync_parse_subcommand 2 'C/store=' 'version' 'h/help'
        case 'update'
            __tsync_parse_subcommand 3 'C/store=' 'set=+' 'version' 'h/help'
        case 'delete'
            __tsync_parse_subcommand -r 2 'C/store=' 'version' 'h/help'
        case 'get'
            __tsync_parse_subcommand 2 'C/store=' 'json' 'version' 'h/help'
        case 'query'
            __tsync_parse_subcommand 1 'C/store=' 'json' 'filter=' 'orderby=' 'top=' 'skip=' 'select=' 'version' 'h/help'
        case 'tables'
            __tsync_parse_subcommand 0 'C/store=' 'json' 'version' 'h/help'
        case 'status'
            __tsync_parse_subcommand 0 'C/store=' 's/short' 'porcelain' 'json' 'exit-code' 'version' 'h/help'
        case 'diff'
            __tsync_parse_subcommand 2 'C/store=' 'json' 'version' 'h/help'
        case 'purge'
            __tsync_parse_subcommand 1 'C/store=' 'filter=' 'force' 'version' 'h/help'
        case 'help'
            __tsync_parse_subcommand -r 1 'version'
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
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'init' -d 'Create a tsync store in DIR/.tsync/.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'remote' -d 'Show or set the server URL.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'insert' -d 'Insert records into a local table and queue them for push.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'update' -d 'Change fields of a local record and queue an update.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'delete' -d 'Delete local records and queue deletes.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'get' -d 'Print one local record.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'query' -d 'Read records of a local table, with OData options.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'tables' -d 'List local tables with record, pending and error counts.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'status' -d 'Show pending operations, errors, saved queries and the remote.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'diff' -d 'Show what each pending change does, field by field, against its base.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'purge' -d 'Drop local records of a table (the server is not touched).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync init" remote' -l 'remote' -d 'The server to push to and pull from.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync init" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync init" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync remote" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync remote" json' -l 'json' -d 'Print machine-readable JSON (field names are stable; see DISCUSSION).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync remote" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync remote" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync insert" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync insert" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync insert" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update"' -l 'set' -d 'Set one field (repeatable).' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync update" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync delete" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync delete" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync delete" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync get" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync get" json' -l 'json' -d 'Print machine-readable JSON (field names are stable; see DISCUSSION).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync get" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync get" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" json' -l 'json' -d 'Print machine-readable JSON (field names are stable; see DISCUSSION).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" filter' -l 'filter' -d 'Keep the records this OData expression is true for.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" orderby' -l 'orderby' -d 'Sort keys: "FIELD [asc|desc], ...".' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" top' -l 'top' -d 'Print at most N records.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" skip' -l 'skip' -d 'Skip the first N records.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" select' -l 'select' -d 'Print only these fields: "FIELD,...".' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync query" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync tables" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync tables" json' -l 'json' -d 'Print machine-readable JSON (field names are stable; see DISCUSSION).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync tables" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync tables" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" s short' -l 'short' -s 's' -d 'One line per table with pending work.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" porcelain' -l 'porcelain' -d 'One line per pending operation, stable for scripts.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" json' -l 'json' -d 'Print machine-readable JSON.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" exit-code' -l 'exit-code' -d 'Exit 1 when anything is pending.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync diff" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync diff" json' -l 'json' -d 'Print machine-readable JSON (field names are stable; see DISCUSSION).'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync diff" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync diff" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" C store' -l 'store' -s 'C' -d 'Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" filter' -l 'filter' -d 'Only records this OData expression is true for.' -rfka ''
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" force' -l 'force' -d 'Also drop the table\'s pending operations.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" version' -l 'version' -d 'Show the version.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync purge" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tsync' -n '__tsync_should_offer_completions_for_flags_or_options "tsync help" version' -l 'version' -d 'Show the version.'
