#!/bin/bash

__tsync_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__tsync_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__tsync_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__tsync_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_tsync() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=(--store -C)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    init|remote|insert|update|upsert|delete|get|query|tables|schema|status|diff|history|show|revert|restore|purge|login|logout|whoami|push|pull|sync|watch|queries|conflicts|resolve|config|log|serve|user|version|help)
        # Offer subcommand argument completions
        "_tsync_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'init remote insert update upsert delete get query tables schema status diff history show revert restore purge login logout whoami push pull sync watch queries conflicts resolve config log serve user version help' -- "${cur}"))
        ;;
    esac
}

_tsync_init() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q -h --help)
    repeating_options=()
    non_repeating_options=(--remote)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--remote')
        return
        ;;
    esac
}

_tsync_remote() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac
}

_tsync_insert() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --csv -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion insert -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_update() {
    repeating_flags=()
    non_repeating_flags=(--dry-run --verbose -v --json --quiet -q -h --help)
    repeating_options=(--set)
    non_repeating_options=(--store -C --filter)
    __tsync_offer_flags_options 3

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--set')
        return
        ;;
    '--filter')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion update -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_upsert() {
    repeating_flags=()
    non_repeating_flags=(--csv --quiet -q --verbose -v --json -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion upsert -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_delete() {
    repeating_flags=()
    non_repeating_flags=(--dry-run --verbose -v --json --quiet -q -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --filter)
    __tsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--filter')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion delete -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_get() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion get -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_query() {
    repeating_flags=()
    non_repeating_flags=(--json --csv -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --filter --orderby --top --skip --select)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--filter')
        return
        ;;
    '--orderby')
        return
        ;;
    '--top')
        return
        ;;
    '--skip')
        return
        ;;
    '--select')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion query -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_tables() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac
}

_tsync_schema() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion schema -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_status() {
    repeating_flags=()
    non_repeating_flags=(--short -s --porcelain --json --ndjson --exit-code -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac
}

_tsync_diff() {
    repeating_flags=()
    non_repeating_flags=(--json --ndjson --no-pager -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion diff -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_history() {
    repeating_flags=()
    non_repeating_flags=(--json --no-pager --verbose -v -p --patch -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --limit)
    __tsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--limit')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion history -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_show() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose -v -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --at --record-version)
    __tsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--at')
        return
        ;;
    '--record-version')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion show -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_revert() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose -v --force -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --to --at)
    __tsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--to')
        return
        ;;
    '--at')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion revert -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_restore() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose -v --dry-run --force -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --at --before-push --filter)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--at')
        return
        ;;
    '--before-push')
        return
        ;;
    '--filter')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion restore -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_purge() {
    repeating_flags=()
    non_repeating_flags=(--force --forget-queries --yes -y --dry-run -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --filter)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--filter')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion purge -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_login() {
    repeating_flags=()
    non_repeating_flags=(--verbose -v --password-stdin -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --user)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--user')
        return
        ;;
    esac
}

_tsync_logout() {
    repeating_flags=()
    non_repeating_flags=(--verbose -v -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac
}

_tsync_whoami() {
    repeating_flags=()
    non_repeating_flags=(--verbose -v --json -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac
}

_tsync_push() {
    repeating_flags=()
    non_repeating_flags=(--dry-run --atomic --check --json --quiet -q --verbose -v -h --help)
    repeating_options=(--table)
    non_repeating_options=(--store -C --on-conflict --prefer --retries)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--table')
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion push -- --table "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    '--on-conflict')
        __tsync_add_completions -W 'fail'$'\n''ours'$'\n''theirs'$'\n''merge'
        return
        ;;
    '--prefer')
        __tsync_add_completions -W 'ours'$'\n''theirs'
        return
        ;;
    '--retries')
        return
        ;;
    esac
}

_tsync_pull() {
    repeating_flags=()
    non_repeating_flags=(--reset --json --quiet -q --verbose -v -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --filter --query-id --page-size --on-conflict --prefer --retries)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--filter')
        return
        ;;
    '--query-id')
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion pull -- --query-id "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    '--page-size')
        return
        ;;
    '--on-conflict')
        __tsync_add_completions -W 'fail'$'\n''ours'$'\n''theirs'$'\n''merge'
        return
        ;;
    '--prefer')
        __tsync_add_completions -W 'ours'$'\n''theirs'
        return
        ;;
    '--retries')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion pull -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_sync() {
    repeating_flags=()
    non_repeating_flags=(--json --quiet -q --verbose -v -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --on-conflict --prefer --retries)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--on-conflict')
        __tsync_add_completions -W 'fail'$'\n''ours'$'\n''theirs'$'\n''merge'
        return
        ;;
    '--prefer')
        __tsync_add_completions -W 'ours'$'\n''theirs'
        return
        ;;
    '--retries')
        return
        ;;
    esac
}

_tsync_watch() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose -v -h --help)
    repeating_options=(--table)
    non_repeating_options=(--store -C --exec --timeout --interval --on-conflict --prefer --retries)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--table')
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion watch -- --table "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    '--exec')
        return
        ;;
    '--timeout')
        return
        ;;
    '--interval')
        return
        ;;
    '--on-conflict')
        __tsync_add_completions -W 'fail'$'\n''ours'$'\n''theirs'$'\n''merge'
        return
        ;;
    '--prefer')
        __tsync_add_completions -W 'ours'$'\n''theirs'
        return
        ;;
    '--retries')
        return
        ;;
    esac
}

_tsync_queries() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac
}

_tsync_conflicts() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=()
    __tsync_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list|show)
        # Offer subcommand argument completions
        "_tsync_conflicts_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list show' -- "${cur}"))
        ;;
    esac
}

_tsync_conflicts_list() {
    repeating_flags=()
    non_repeating_flags=(--json --ndjson --no-pager -h --help)
    repeating_options=()
    non_repeating_options=(--store -C --table)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--table')
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion conflicts list -- --table "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_conflicts_show() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion conflicts show -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_resolve() {
    repeating_flags=()
    non_repeating_flags=(--all --ours --theirs --cancel --discard --merge --push --dry-run --park --json --quiet -q --verbose -v -h --help)
    repeating_options=(--class --kind)
    non_repeating_options=(--store -C --table --prefer)
    __tsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '--table')
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion resolve -- --table "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    '--class')
        __tsync_add_completions -W 'version-conflict'$'\n''already-exists'$'\n''missing'$'\n''rejected'$'\n''forbidden'$'\n''schema'$'\n''server-error'
        return
        ;;
    '--kind')
        __tsync_add_completions -W 'insert'$'\n''update'$'\n''delete'
        return
        ;;
    '--prefer')
        __tsync_add_completions -W 'ours'$'\n''theirs'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion resolve -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_config() {
    repeating_flags=()
    non_repeating_flags=(--unset --list --json -h --help)
    repeating_options=()
    non_repeating_options=(--store -C)
    __tsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tsync_add_completions -W "$(__tsync_custom_complete ---completion config -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tsync_log() {
    repeating_flags=()
    non_repeating_flags=(--json --no-pager -h --help)
    repeating_options=()
    non_repeating_options=(--store -C -n)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--store'|'-C')
        __tsync_add_completions -d
        return
        ;;
    '-n')
        return
        ;;
    esac
}

_tsync_serve() {
    repeating_flags=()
    non_repeating_flags=(--no-auth --insecure --metrics -h --help)
    repeating_options=(--per-user --access --index --schema --trusted-proxy)
    non_repeating_options=(--db --host --port --listen-db --max-top --max-batch --max-connections --max-client-connections --max-account-requests --max-watchers --header-timeout --idle-timeout --body-timeout --query-timeout --tls-cert --tls-key --token-ttl --log-format --keep-history --keep-deleted --db-share --max-tables --config)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--db')
        return
        ;;
    '--host')
        return
        ;;
    '--port')
        return
        ;;
    '--listen-db')
        return
        ;;
    '--per-user')
        return
        ;;
    '--access')
        return
        ;;
    '--index')
        return
        ;;
    '--schema')
        return
        ;;
    '--max-top')
        return
        ;;
    '--max-batch')
        return
        ;;
    '--max-connections')
        return
        ;;
    '--max-client-connections')
        return
        ;;
    '--max-account-requests')
        return
        ;;
    '--max-watchers')
        return
        ;;
    '--header-timeout')
        return
        ;;
    '--idle-timeout')
        return
        ;;
    '--body-timeout')
        return
        ;;
    '--query-timeout')
        return
        ;;
    '--trusted-proxy')
        return
        ;;
    '--tls-cert')
        return
        ;;
    '--tls-key')
        return
        ;;
    '--token-ttl')
        return
        ;;
    '--log-format')
        __tsync_add_completions -W 'text'$'\n''json'
        return
        ;;
    '--keep-history')
        return
        ;;
    '--keep-deleted')
        return
        ;;
    '--db-share')
        return
        ;;
    '--max-tables')
        return
        ;;
    '--config')
        return
        ;;
    esac
}

_tsync_user() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=()
    __tsync_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    add|remove|list|passwd|unlock|token|role|group)
        # Offer subcommand argument completions
        "_tsync_user_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'add remove list passwd unlock token role group' -- "${cur}"))
        ;;
    esac
}

_tsync_user_add() {
    repeating_flags=()
    non_repeating_flags=(--password-stdin -h --help)
    repeating_options=(--role --group)
    non_repeating_options=(--db --config)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--role')
        return
        ;;
    '--group')
        return
        ;;
    '--db')
        return
        ;;
    '--config')
        __tsync_add_completions -o plusdirs -fX '!*.@(toml)'
        return
        ;;
    esac
}

_tsync_user_remove() {
    repeating_flags=()
    non_repeating_flags=(--yes -y --dry-run -h --help)
    repeating_options=()
    non_repeating_options=(--db --config)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--db')
        return
        ;;
    '--config')
        __tsync_add_completions -o plusdirs -fX '!*.@(toml)'
        return
        ;;
    esac
}

_tsync_user_list() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--db --config)
    __tsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--db')
        return
        ;;
    '--config')
        __tsync_add_completions -o plusdirs -fX '!*.@(toml)'
        return
        ;;
    esac
}

_tsync_user_passwd() {
    repeating_flags=()
    non_repeating_flags=(--password-stdin -h --help)
    repeating_options=()
    non_repeating_options=(--db --config)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--db')
        return
        ;;
    '--config')
        __tsync_add_completions -o plusdirs -fX '!*.@(toml)'
        return
        ;;
    esac
}

_tsync_user_unlock() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=(--db --config)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--db')
        return
        ;;
    '--config')
        __tsync_add_completions -o plusdirs -fX '!*.@(toml)'
        return
        ;;
    esac
}

_tsync_user_token() {
    repeating_flags=()
    non_repeating_flags=(--read-only -h --help)
    repeating_options=(--table)
    non_repeating_options=(--ttl --db --config)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--ttl')
        return
        ;;
    '--table')
        return
        ;;
    '--db')
        return
        ;;
    '--config')
        __tsync_add_completions -o plusdirs -fX '!*.@(toml)'
        return
        ;;
    esac
}

_tsync_user_role() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=(--add --remove)
    non_repeating_options=(--db --config)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--add')
        return
        ;;
    '--remove')
        return
        ;;
    '--db')
        return
        ;;
    '--config')
        __tsync_add_completions -o plusdirs -fX '!*.@(toml)'
        return
        ;;
    esac
}

_tsync_user_group() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=(--add --remove)
    non_repeating_options=(--db --config)
    __tsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--add')
        return
        ;;
    '--remove')
        return
        ;;
    '--db')
        return
        ;;
    '--config')
        __tsync_add_completions -o plusdirs -fX '!*.@(toml)'
        return
        ;;
    esac
}

_tsync_version() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=()
    __tsync_offer_flags_options 0
}

_tsync_help() {
    __tsync_add_completions -W "$(__tsync_custom_complete ---completion help -- positional@0 "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
}

complete -o filenames -F _tsync tsync
