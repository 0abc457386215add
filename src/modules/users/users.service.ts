import { Value } from 'typebox/value';
import { v7 as uuidv7 } from 'uuid';
import { AppError, conflict, isUniqueViolation } from '../../platform/errors.js';
import { hashPassword } from '../../platform/crypto/passwords.js';
import { iso } from '../../platform/http/schemas.js';
import type { UsersRepository } from './users.repository.js';
import { CreateUserBody } from './users.schemas.js';

export interface NewUser {
  username: string;
  email: string;
  password: string;
  is_admin?: boolean;
}

type UserRow = Awaited<ReturnType<UsersRepository['list']>>[number];

const toUser = (u: UserRow) => ({
  id: u.id,
  username: u.username,
  email: u.email,
  is_admin: u.is_admin,
  created: iso(u.created_at),
  updated: iso(u.updated_at),
});

export class UsersService {
  constructor(private readonly users: UsersRepository) {}

  /** A user named by username or else by e-mail (how members are added), or undefined. */
  async findByUsernameOrEmail(name: string) {
    return (await this.users.findByUsername(name)) ?? (await this.users.findByEmailWithHash(name));
  }

  /** The user of this e-mail with the password hash, for login only. */
  findCredentials(email: string) {
    return this.users.findByEmailWithHash(email);
  }

  /** Used by the API, the CLI and first-start bootstrap alike, so all validate the same way. */
  async create(input: NewUser) {
    if (!Value.Check(CreateUserBody, input)) {
      const first = [...Value.Errors(CreateUserBody, input)][0];
      throw new AppError('VALIDATION', `Invalid user: ${first?.instancePath.replace(/^\//, '') || 'body'} ${first?.message ?? ''}`.trim());
    }
    try {
      const row = await this.users.insert({
        id: uuidv7(),
        username: input.username,
        email: input.email.toLowerCase(),
        password_hash: await hashPassword(input.password),
        is_admin: input.is_admin ?? false,
      });
      return toUser(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('A user with that username or email already exists');
      throw err;
    }
  }

  async list() {
    return (await this.users.list()).map(toUser);
  }

  count() {
    return this.users.count();
  }
}
