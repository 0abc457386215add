import type { Command } from 'commander';

interface Node {
  name: string;
  subcommands: string[];
  options: string[];
}

/** Every command path (`''`, `config`, `config set`, …) with its subcommands and options. */
function walk(command: Command, prefix: string[] = [], into: Map<string, Node> = new Map()): Map<string, Node> {
  const key = prefix.join(' ');
  const options = command.options.map((o) => o.long).filter((o): o is string => Boolean(o));
  into.set(key, { name: key, subcommands: command.commands.flatMap((c) => [c.name(), ...c.aliases()]), options: [...options, '--help'] });
  for (const c of command.commands) for (const name of [c.name(), ...c.aliases()]) walk(c, [...prefix, name], into);
  return into;
}

/** A completion script for bash, zsh or fish, generated from the command tree. */
export function completionScript(program: Command, shell: string): string {
  const tree = walk(program);
  const globals = program.options
    .map((o) => o.long)
    .filter(Boolean)
    .join(' ');
  if (shell === 'fish') {
    const lines = [
      '# slipway completion for fish: slipway completion fish > ~/.config/fish/completions/slipway.fish',
      'complete -c slipway -f',
    ];
    for (const node of tree.values()) {
      const words = node.name === '' ? [] : node.name.split(' ');
      const condition = words.length === 0 ? '__fish_use_subcommand' : `__fish_seen_subcommand_from ${words[words.length - 1]}`;
      for (const sub of node.subcommands) lines.push(`complete -c slipway -n '${condition}' -a '${sub}'`);
      for (const option of node.options) lines.push(`complete -c slipway -n '${condition}' -l '${option.replace(/^--/, '')}'`);
    }
    return `${lines.join('\n')}\n`;
  }
  const cases = [...tree.values()]
    .map((n) => `    "${n.name}") words="${[...n.subcommands, ...n.options, globals].join(' ')}" ;;`)
    .join('\n');
  const body = `_slipway_words() {
  local path="" w
  for w in "\${@}"; do
    case "$w" in -*) ;; *) if [ -n "$(_slipway_case "\${path:+$path }$w")" ]; then path="\${path:+$path }$w"; fi ;; esac
  done
  _slipway_case "$path"
}
_slipway_case() {
  local words=""
  case "$1" in
${cases}
  esac
  printf '%s' "$words"
}`;
  if (shell === 'zsh') {
    return `# slipway completion for zsh: eval "$(slipway completion zsh)" in ~/.zshrc
${body}
_slipway() {
  local -a candidates
  candidates=(\${=$(_slipway_words "\${(@)words[2,CURRENT-1]}")})
  compadd -- $candidates
}
compdef _slipway slipway
`;
  }
  return `# slipway completion for bash: eval "$(slipway completion bash)" in ~/.bashrc
${body}
_slipway() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  COMPREPLY=($(compgen -W "$(_slipway_words "\${COMP_WORDS[@]:1:COMP_CWORD-1}")" -- "$cur"))
}
complete -F _slipway slipway
`;
}
