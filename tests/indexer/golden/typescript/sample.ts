import { EventEmitter } from "events";
import type { Logger } from "./logger";
import * as db from "./db";

/** Identifier of a user. */
export type UserId = string;

export enum Role {
  Admin,
  Member,
}

/** Anything that can be stored. */
export interface Entity {
  id: UserId;
  save(): Promise<void>;
}

export interface Named extends Entity {
  name: string;
}

/**
 * A registered user.
 */
export class User extends EventEmitter implements Named {
  static readonly TABLE = "users";
  private role: Role = Role.Member;

  constructor(public id: UserId, public name: string, private log?: Logger) {
    super();
  }

  /** Persist the user. */
  async save(): Promise<void> {
    await db.insert(User.TABLE, { id: this.id, name: this.name });
    this.emit("saved", this.id);
  }

  protected promote(role: Role): boolean {
    this.role = role;
    this.log?.info(`promoted ${this.name}`);
    return true;
  }
}

export abstract class Repository<T extends Entity> {
  abstract find(id: UserId): Promise<T | undefined>;

  /** Load every entity. */
  async all(): Promise<T[]> {
    return db.query<T>("select *");
  }
}

export function isAdmin(user: User): boolean {
  return user.name === "root";
}

export const byName = (a: Named, b: Named): number => a.name.localeCompare(b.name);

namespace Internal {
  export function reset(): void {
    db.truncate(User.TABLE);
  }
}

export * from "./models.js";
export * as audit from "./audit.js";
export default isAdmin;

export async function promoteAll(users: Repository<User>, admin: User): Promise<void> {
  const first = new User("1", "a");
  await first.save();
  admin.promote(Role.Admin);
  users.all();
}

declare class Legacy {
  constructor(url: string);
  ping(timeout?: number): boolean;
}
