/**
 * Shell completion scripts, made from the same command list as everything else: resources, then actions, then the
 * action's flags. zsh runs the bash function through bashcompinit (shipped with zsh), so the two cannot differ.
 */
export interface CompletionCommand {
  resource: string;
  action?: string;
  flags: string[];
}

const quote = (words: string[]) => words.join(' ');

export function completionScript(shell: 'bash' | 'zsh' | 'fish', commands: CompletionCommand[]): string {
  const resources = [...new Set(commands.map((command) => command.resource))];
  const actionsOf = (resource: string) => commands.filter((command) => command.resource === resource && command.action).map((command) => command.action!);
  if (shell === 'fish') {
    const lines = ['# postwise completion for fish: postwise completion fish > ~/.config/fish/completions/postwise.fish'];
    lines.push(`complete -c postwise -f -n '__fish_use_subcommand' -a '${quote(resources)}'`);
    for (const resource of resources) {
      const actions = actionsOf(resource);
      if (actions.length) lines.push(`complete -c postwise -f -n '__fish_seen_subcommand_from ${resource}; and not __fish_seen_subcommand_from ${quote(actions)}' -a '${quote(actions)}'`);
    }
    for (const command of commands) {
      const condition = command.action ? `__fish_seen_subcommand_from ${command.resource}; and __fish_seen_subcommand_from ${command.action}` : `__fish_seen_subcommand_from ${command.resource}`;
      for (const flag of command.flags) lines.push(`complete -c postwise -f -n '${condition}' -l '${flag.replace(/^--/, '')}'`);
    }
    return `${lines.join('\n')}\n`;
  }
  const resourceCases = resources
    .map((resource) => `      ${resource}) COMPREPLY=($(compgen -W "${quote(actionsOf(resource).length ? actionsOf(resource) : commands.find((command) => command.resource === resource)!.flags)}" -- "$cur")) ;;`)
    .join('\n');
  const flagCases = commands
    .filter((command) => command.action)
    .map((command) => `      "${command.resource} ${command.action}") COMPREPLY=($(compgen -W "${quote(command.flags)}" -- "$cur")) ;;`)
    .join('\n');
  const topFlags = commands.filter((command) => !command.action).map((command) => `      ${command.resource}) COMPREPLY=($(compgen -W "${quote(command.flags)}" -- "$cur")) ;;`);
  const bash = `_postwise() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${quote(resources)}" -- "$cur"))
  elif [ "$COMP_CWORD" -eq 2 ]; then
    case "\${COMP_WORDS[1]}" in
${resourceCases}
    esac
  else
    case "\${COMP_WORDS[1]} \${COMP_WORDS[2]}" in
${flagCases}
      *) case "\${COMP_WORDS[1]}" in
${topFlags.join('\n')}
         esac ;;
    esac
  fi
}
complete -o default -F _postwise postwise
`;
  if (shell === 'zsh') return `# postwise completion for zsh: source <(postwise completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bash}`;
  return `# postwise completion for bash: source <(postwise completion bash)\n${bash}`;
}
