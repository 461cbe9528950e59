/**
 * ISO 4217 List One (current currency and funds codes), the edition published 2026-01-01:
 * after XCG replaced ANG, ZWG replaced ZWL, SLE replaced SLL, XAD (Arab Accounting Dinar) was
 * added, CUC was withdrawn, and Croatia (HRK, 2023) and Bulgaria (BGN, 2026-01-01) adopted
 * the euro. XTS (reserved for testing) and XXX (no currency) are on the list but are not
 * money, so they are left out. Update this table when the maintenance agency amends the list.
 */
const ACTIVE_CODES = `
  AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD
  CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP
  GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR
  KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN
  MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD
  SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX
  USD USN UYI UYU UYW UZS VED VES VND VUV WST XAD XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD
  XPF XPT XSU XUA YER ZAR ZMW ZWG`;

export const ACTIVE_CURRENCIES: ReadonlySet<string> = new Set(ACTIVE_CODES.trim().split(/\s+/));

export function isActiveCurrency(code: string): boolean {
  return ACTIVE_CURRENCIES.has(code);
}

/**
 * ISO 4217 List One's "Minor unit" where it differs from CLDR's digits (what Node's `Intl`
 * gives, below): CLDR writes these without the places everyday prices no longer use (HUF,
 * IDR, PKR, COP, IQD...), ISO 4217 keeps them, and the ISO list is the contract. Checked
 * against every active code in test/unit/amounts.test.ts, so an ICU update that moves one
 * fails there first.
 */
const ISO_MINOR_UNITS_UNLIKE_CLDR: Readonly<Record<string, number>> = {
  AFN: 2,
  ALL: 2,
  COP: 2,
  HUF: 2,
  IDR: 2,
  IQD: 3,
  IRR: 2,
  KPW: 2,
  LAK: 2,
  LBP: 2,
  MGA: 2,
  MMK: 2,
  PKR: 2,
  SOS: 2,
  SYP: 2,
  YER: 2,
};

/** List One's codes whose "Minor unit" is N.A. (metals, bond-market units, SDR, XSU, XUA): no amount of them is in minor units. */
const NO_MINOR_UNIT: ReadonlySet<string> = new Set(['XAG', 'XAU', 'XBA', 'XBB', 'XBC', 'XBD', 'XDR', 'XPD', 'XPT', 'XSU', 'XUA']);

const minorUnitsSeen = new Map<string, number | undefined>();

/**
 * The places of an active currency's minor unit by ISO 4217 (JPY 0, USD 2, KWD 3, CLF 4), from
 * CLDR's currency digits as `Intl` knows them with ISO's own where the two differ; undefined
 * for a code that is not active or has no minor unit.
 */
export function minorUnitsOf(code: string): number | undefined {
  if (minorUnitsSeen.has(code)) return minorUnitsSeen.get(code);
  let places: number | undefined;
  if (isActiveCurrency(code) && !NO_MINOR_UNIT.has(code)) {
    places =
      ISO_MINOR_UNITS_UNLIKE_CLDR[code] ??
      new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits;
  }
  minorUnitsSeen.set(code, places);
  return places;
}

/** The most places any active currency's minor unit has (CLF's and UYW's 4): the scale of a column in each row's own minor units. */
export function mostMinorUnits(): number {
  return [...ACTIVE_CURRENCIES].reduce((most, code) => Math.max(most, minorUnitsOf(code) ?? 0), 0);
}
