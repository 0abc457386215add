/**
 * One call an Ancla client makes, as read from the client's source (SideQuest-Group/ancla-client):
 * which client, the HTTP method, the path as the client sends it (with `/api/v1` and its trailing
 * slashes; `{name}` for what varies), the fields the client decodes from the answer, and the name
 * of the contract test that proves it here. The docs table of Ancla operations is generated from
 * every `calls/*.ts` file's `calls`.
 */
export type AnclaCall = {
  client: 'go-cli' | 'go-sdk' | 'python-sdk' | 'ts-sdk';
  method: string;
  path: string;
  decodes: string[];
  test: string;
};
